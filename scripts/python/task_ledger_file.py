"""The Python original's task-ledger file layout and TaskLedgerEntry, re-implemented from reference section 3.1.

TaskLedgerEntry.from_dict(d) = TaskLedgerEntry(**d): an unknown key is a TypeError, as in the original.
Commands:
  read <path>                       print every row as the original parses it (JSON lines)
  write <path> <row-json>           upsert one row, as the original's set() does
  derive <task> <kwargs-json> [<id_from-json>]   print derive_request_id(task, (), kwargs)
"""
import dataclasses
import hashlib
import json
import os
import sys
import time


@dataclasses.dataclass
class TaskLedgerEntry:
    request_id: str
    task: str
    args: list
    kwargs: dict
    status: str
    result: object = None
    error: object = None
    started_at: float = dataclasses.field(default_factory=time.time)
    finished_at: object = None

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


def derive_request_id(task, args, kwargs, id_from=None):
    if kwargs.get("task_id") is not None:
        return str(kwargs["task_id"])
    if kwargs.get("run_id") is not None:
        return f"{task}:{kwargs['run_id']}"
    if id_from:
        parts = [f"{f}={kwargs[f]}" for f in id_from if f in kwargs]
        if parts:
            return f"{task}:" + ":".join(parts)
    blob = json.dumps({"args": list(args), "kwargs": kwargs}, sort_keys=True, default=str)
    return f"{task}:{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def load(path):
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    cmd = sys.argv[1]
    if cmd == "read":
        for rid, d in load(sys.argv[2]).items():
            e = TaskLedgerEntry.from_dict(d)
            assert e.request_id == rid
            print(json.dumps(dataclasses.asdict(e)))
    elif cmd == "write":
        data = load(sys.argv[2])
        e = TaskLedgerEntry.from_dict(json.loads(sys.argv[3]))
        data[e.request_id] = dataclasses.asdict(e)
        tmp = sys.argv[2] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, default=str)
        os.replace(tmp, sys.argv[2])
    elif cmd == "derive":
        id_from = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
        print(derive_request_id(sys.argv[2], (), json.loads(sys.argv[3]), id_from))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
