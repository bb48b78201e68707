"""Receipts through the real Python original (PYTHONPATH = the folder holding its `mycelium` package), for
scripts/python-interop-receipts.ts.

Usage: python3 original-receipts.py <receipts.jsonl> <key> emit   (JSON lines on stdin: {"request_id", "kwargs",
           "outputs", "error"}; signs and appends one receipt each with its AuditReceiptEmitter)
       python3 original-receipts.py <receipts.jsonl> <key> verify (prints a JSON list: verify_receipt of each)
"""
import json
import sys

from mycelium.audit_receipt import AuditReceiptEmitter, FileAuditReceiptStorage, verify_receipt

path, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
storage = FileAuditReceiptStorage(path)
if mode == "emit":
    emitter = AuditReceiptEmitter(agent_id="interop", signing_key=key, storage=storage)
    for line in sys.stdin:
        d = json.loads(line)
        emitter._emit(
            action="send_payment", action_kind="tool", request_id=d["request_id"],
            inputs={"args": [], "kwargs": d["kwargs"]}, outputs=d["outputs"],
            status="failed" if d["error"] is not None else "completed", error=d["error"],
        )
else:
    print(json.dumps([verify_receipt(r, key) for r in storage.list_all()]))
