"""One step through the real Python original's `mycelium.yaml` support (PYTHONPATH = the folder holding its
`mycelium` package), for scripts/python-interop.ts. Prints one JSON line.

Usage: python3 original-config.py <mycelium.yaml> <step as JSON>
  {"op": "tool", "name", "args", "meta", "run"}: cfg.apply_tool(name, body), called inside cfg.run(run) when
      `run` is set; `meta` keys (tool_call_id, request_id, ...) are passed as the original takes them, as kwargs.
  {"op": "task", "name", "args", "meta", "fail"}: cfg.apply_named_task(name, body); meta task_id / run_id as kwargs.
  {"op": "flush", "run", "state", "fail"}: cfg.run(run) records `state`, then raises RuntimeError("boom") if fail.
  {"op": "resume", "run"}: cfg.build_state_flush().resume(run).
  {"op": "verify"}: verify_receipt() of every receipt in audit_receipt's file, with the config's key.
"""
import json
import sys
import warnings

from mycelium import side_effect
from mycelium.audit_receipt import FileAuditReceiptStorage, resolve_signing_key, verify_receipt
from mycelium.config import load_config

warnings.simplefilter("ignore")
cfg = load_config(sys.argv[1])
step = json.loads(sys.argv[2])
op = step["op"]
executed = 0


def tool_body(**kwargs):
    global executed
    executed += 1
    with side_effect():
        return {"tool": step["name"], "args": kwargs, "by": "python"}


def task_body(**kwargs):
    global executed
    executed += 1
    if step.get("fail"):
        raise RuntimeError("task failed on purpose")
    return {"task": step["name"], "args": kwargs, "by": "python"}


def out(**fields):
    print(json.dumps({"executed": executed, "error": None, "message": None, **fields}, default=str))


try:
    if op == "tool":
        fn = cfg.apply_tool(step["name"], tool_body)
        kwargs = {**step.get("args", {}), **step.get("meta", {})}
        if step.get("run") is not None:
            with cfg.run(step["run"]):
                result = fn(**kwargs)
        else:
            result = fn(**kwargs)
        out(result=result)
    elif op == "task":
        fn = cfg.apply_named_task(step["name"], task_body)
        out(result=fn(**{**step.get("args", {}), **step.get("meta", {})}))
    elif op == "flush":
        try:
            with cfg.run(step["run"]) as run:
                run.record(step["state"])
                if step.get("fail"):
                    raise RuntimeError("boom")
        except RuntimeError:
            pass
        out(result=None)
    elif op == "resume":
        out(result=cfg.build_state_flush().resume(step["run"]))
    elif op == "verify":
        ar = cfg.audit_receipt
        key = resolve_signing_key(signing_key=ar.get("signing_key"), signing_key_env=ar.get("signing_key_env"))
        receipts = FileAuditReceiptStorage(ar["path"]).list_all()
        out(result=[[r.request_id, r.action, verify_receipt(r, key)] for r in receipts])
    else:
        raise ValueError(f"unknown op {op!r}")
except Exception as e:  # noqa: BLE001 - the caller compares the error's class name
    print(json.dumps({"executed": executed, "result": None, "error": type(e).__name__, "message": str(e)}))
