"""One call through the real Python original (PYTHONPATH = the folder holding its `mycelium` package), for
scripts/python-interop.ts. Prints one JSON line: {"executed": n, "result": ..., "error": name|null, "message": ...}.

Usage: python3 original-interop.py <store> <side_effect_class> <tool_call_id> <amount> [crash|float]
  store: JSON, {"kind": "file", "path"} | {"kind": "redis", "url", "prefix"} | {"kind": "postgres", "dsn", "table"},
      the original's FileLedgerStorage, RedisLedgerStorage or PostgresLedgerStorage (interop_store.py).
  crash: enter side_effect() and exit the process inside it (a worker killed mid-effect).
  float: pass the amount as a float (`100.0`), not an int.
Environment: INTEROP_START_AT (epoch ms) waits until then to call; INTEROP_BODY_MS makes the side effect that slow.
"""
import json
import os
import sys
import time
import warnings

from interop_store import storage_from_spec
from mycelium import ledger_sync, side_effect
from mycelium.transition import SideEffectClass, ToolTransitionBinding

warnings.simplefilter("ignore")
spec, cls, call_id, amount = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
mode = sys.argv[5] if len(sys.argv) > 5 else ""
crash = mode == "crash"
binding = ToolTransitionBinding.for_tool(
    agent_id="interop", policy_version="1", side_effect_class=SideEffectClass(cls)
)
executed = 0
storage = storage_from_spec(spec)


@ledger_sync(storage=storage, transition_binding=binding, lease_ttl=1.0)
def send_payment(amount: float, recipient: str) -> dict:
    global executed
    executed += 1
    with side_effect():
        if crash:
            os._exit(9)
        # A slow effect (the race checks), so the other side's call finds it in flight and must wait for it.
        time.sleep(float(os.environ.get("INTEROP_BODY_MS", "0")) / 1000)
        return {"paid": amount, "by": "python"}


# The race checks start both sides' calls at one instant, after both processes are up.
time.sleep(max(0.0, float(os.environ.get("INTEROP_START_AT", "0")) / 1000 - time.time()))
try:
    out = send_payment(amount=amount if mode == "float" else int(amount), recipient="acct_1", tool_call_id=call_id)
    print(json.dumps({"executed": executed, "result": out, "error": None, "message": None}))
except Exception as e:  # noqa: BLE001 - the caller compares the error's class name
    print(json.dumps({"executed": executed, "result": None, "error": type(e).__name__, "message": str(e)}))
