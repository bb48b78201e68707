"""One task run through the real Python original's task ledger (PYTHONPATH = the folder holding its `mycelium`
package), for scripts/python-interop-races.ts. Prints one JSON line: {"executed": n, "result": ..., "error":
name|null, "message": ...}.

Usage: python3 original-task.py <store> <task_id> [fail]
  store: JSON, {"kind": "file", "path"} | {"kind": "redis", "url", "prefix"} | {"kind": "postgres", "dsn", "table"},
      the original's TaskFileLedgerStorage, RedisTaskLedgerStorage or PostgresTaskLedgerStorage.
  fail: the task raises (its row is recorded failed, and the next call runs it again).
Environment: INTEROP_START_AT (epoch ms) waits until then to call; INTEROP_BODY_MS makes the task that slow.
"""
import json
import os
import sys
import time
import warnings

from mycelium import PostgresTaskLedgerStorage, RedisTaskLedgerStorage
from mycelium.task_ledger import TaskFileLedgerStorage, task_ledger_sync

warnings.simplefilter("ignore")
spec, task_id = json.loads(sys.argv[1]), sys.argv[2]
fail = len(sys.argv) > 3 and sys.argv[3] == "fail"
if spec["kind"] == "redis":
    storage = RedisTaskLedgerStorage(spec["url"], prefix=spec["prefix"])
elif spec["kind"] == "postgres":
    storage = PostgresTaskLedgerStorage(spec["dsn"], table=spec["table"])
else:
    storage = TaskFileLedgerStorage(spec["path"])
executed = 0


@task_ledger_sync(storage=storage)
def nightly_report(region: str) -> dict:
    global executed
    executed += 1
    time.sleep(float(os.environ.get("INTEROP_BODY_MS", "0")) / 1000)
    if fail:
        raise RuntimeError("task failed on purpose")
    return {"region": region, "by": "python"}


time.sleep(max(0.0, float(os.environ.get("INTEROP_START_AT", "0")) / 1000 - time.time()))
try:
    out = nightly_report(region="eu", task_id=task_id)
    print(json.dumps({"executed": executed, "result": out, "error": None, "message": None}))
except Exception as e:  # noqa: BLE001 - the caller compares the error's class name
    print(json.dumps({"executed": executed, "result": None, "error": type(e).__name__, "message": str(e)}))
