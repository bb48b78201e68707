"""Re-implementation of the Python original's `verify_receipt` (mycelium audit_receipt.py, reference section 3.3).

Reads receipt records as JSONL (the original's FileAuditReceiptStorage format) and checks each signature:
HMAC-SHA256(key=signing_key UTF-8, msg=json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)),
payload = every field but `signature`. Prints one JSON line per record: {"receipt_id", "valid"}; exit 1 if any fails.

Usage: python3 verify_receipt.py <receipts.jsonl> (signing key in the env var MYCELIUM_RECEIPT_KEY)
"""
import hashlib
import hmac
import json
import os
import sys

FIELDS = ("receipt_id", "agent_id", "action", "action_kind", "request_id", "inputs", "outputs", "status",
          "timestamp", "signature", "error")


def payload(record):
    return {k: record[k] for k in FIELDS if k != "signature"}


def verify_receipt(record, key):
    if set(record) != set(FIELDS):
        raise TypeError(f"unexpected receipt fields: {sorted(set(record) ^ set(FIELDS))}")
    msg = json.dumps(payload(record), sort_keys=True, separators=(",", ":"), default=str)
    expected = hmac.new(key.encode("utf-8"), msg.encode("utf-8"), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, record["signature"])


def original_verifier():
    """The original's own from_dict + verify_receipt when its source is at MYCELIUM_PY_SRC (see
    scripts/python-interop.ts); its float() of the timestamp is a step the re-implementation above would not catch."""
    src = os.environ.get("MYCELIUM_PY_SRC")
    if not src:
        return None
    sys.path.insert(0, src)
    from mycelium.audit_receipt import AuditReceiptRecord
    from mycelium.audit_receipt import verify_receipt as verify

    return lambda record, key: verify(AuditReceiptRecord.from_dict(record), key)


def main():
    key = os.environ["MYCELIUM_RECEIPT_KEY"]
    check = original_verifier() or verify_receipt
    ok = True
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            valid = check(record, key)
            ok = ok and valid
            print(json.dumps({"receipt_id": record["receipt_id"], "valid": valid}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
