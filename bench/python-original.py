# The Python original's per-call cost, for bench/ledger-vs-powertools.bench.ts (run with PYTHONPATH=$MYCELIUM_PY_SRC).
# Same scenario: a keyed_mutate tool on the in-memory store, fresh (a new tool_call_id per call) and replayed.
# Prints one JSON line {"fresh": µs, "replay": µs}. Written from the original's documented API (its README
# quickstart); the Python source is not shipped with this repository, so this script has not been run here.
import json
import time
import warnings

from mycelium import ActionLedger, InMemoryLedgerStorage, ledger_sync
from mycelium.transition import SideEffectClass, ToolTransitionBinding

warnings.simplefilter("ignore")
binding = ToolTransitionBinding.for_tool(
    agent_id="bench", policy_version="1", side_effect_class=SideEffectClass.KEYED_MUTATE
)
led = ActionLedger(storage=InMemoryLedgerStorage())


@ledger_sync(ledger=led, transition_binding=binding)
def send_payment(amount: float, recipient: str) -> dict:
    return {"ok": True, "amount": amount}


def per_call(n, fn):
    for i in range(min(n, 200)):
        fn(-i - 1)
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t0) * 1e6 / n


fresh = per_call(2000, lambda i: send_payment(amount=i, recipient="acct_1", tool_call_id=f"f-{i}"))
send_payment(amount=1, recipient="acct_1", tool_call_id="replayed")
replay = per_call(5000, lambda i: send_payment(amount=1, recipient="acct_1", tool_call_id="replayed"))
print(json.dumps({"fresh": fresh, "replay": replay}))
