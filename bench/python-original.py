# The Python original's per-call cost, for bench/ledger-vs-powertools.bench.ts (run with PYTHONPATH=$MYCELIUM_PY_SRC,
# the folder that holds the original's `mycelium` package: `sdk/` in its repository).
# Same scenario as the TypeScript rows: a keyed_mutate tool on the in-memory store, fresh (a new tool_call_id per
# call) and replayed, through the README's `@ledger_sync` decorator and through the async `@ledger`, each with the
# original's defaults (lease auto-renew on, as in the TypeScript ledger).
# Prints one JSON line: µs per call for each, plus the rows stored when the fresh loop ended.
import asyncio
import dataclasses
import json
import time
import warnings

from mycelium import InMemoryLedgerStorage, ledger, ledger_sync
from mycelium.transition import SideEffectClass, ToolTransitionBinding

warnings.simplefilter("ignore")
binding = ToolTransitionBinding.for_tool(
    agent_id="bench", policy_version="1", side_effect_class=SideEffectClass.KEYED_MUTATE
)
sync_store = InMemoryLedgerStorage()
async_store = InMemoryLedgerStorage()


@ledger_sync(storage=sync_store, transition_binding=binding)
def send_payment(amount: float, recipient: str) -> dict:
    return {"ok": True, "amount": amount}


@ledger(storage=async_store, transition_binding=binding)
async def send_payment_async(amount: float, recipient: str) -> dict:
    return {"ok": True, "amount": amount}


def per_call(n, fn):
    for i in range(min(n, 200)):
        fn(-i - 1)
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t0) * 1e6 / n


async def per_call_async(n, fn):
    for i in range(min(n, 200)):
        await fn(-i - 1)
    t0 = time.perf_counter()
    for i in range(n):
        await fn(i)
    return (time.perf_counter() - t0) * 1e6 / n


def at_rows(rows):
    """Fresh and replay µs per call with `rows` rows already stored (copies of one real row, other tool-call ids)."""
    store = InMemoryLedgerStorage()

    @ledger_sync(storage=store, transition_binding=binding)
    def pay(amount: float, recipient: str) -> dict:
        return {"ok": True, "amount": amount}

    pay(amount=1, recipient="acct_1", tool_call_id="seed")
    seed = store.list_all()[0]
    for i in range(rows - 1):
        kwargs = {**seed.kwargs, "tool_call_id": f"pre-{i}"}
        store.set(dataclasses.replace(seed, request_id=f"pre-{i}", kwargs=kwargs))
    fresh = per_call(100, lambda i: pay(amount=i, recipient="acct_1", tool_call_id=f"r-{i}"))
    replay = per_call(200, lambda i: pay(amount=1, recipient="acct_1", tool_call_id="seed"))
    return {"rows": rows, "fresh": fresh, "replay": replay}


def main():
    fresh = per_call(2000, lambda i: send_payment(amount=i, recipient="acct_1", tool_call_id=f"f-{i}"))
    send_payment(amount=1, recipient="acct_1", tool_call_id="replayed")
    replay = per_call(5000, lambda i: send_payment(amount=1, recipient="acct_1", tool_call_id="replayed"))

    async def run_async():
        f = await per_call_async(
            2000, lambda i: send_payment_async(amount=i, recipient="acct_1", tool_call_id=f"f-{i}")
        )
        await send_payment_async(amount=1, recipient="acct_1", tool_call_id="replayed")
        r = await per_call_async(
            5000, lambda i: send_payment_async(amount=1, recipient="acct_1", tool_call_id="replayed")
        )
        return f, r

    fresh_async, replay_async = asyncio.run(run_async())
    print(json.dumps({
        "fresh": fresh,
        "replay": replay,
        "freshAsync": fresh_async,
        "replayAsync": replay_async,
        "rows": len(sync_store.list_all()),
        "byRows": [at_rows(n) for n in (100, 1000, 10000)],
    }))


main()
