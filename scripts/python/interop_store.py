"""The original's ledger storage a store spec names, for the interop scripts beside this file.

spec: {"kind": "file", "path"} | {"kind": "redis", "url", "prefix"} | {"kind": "postgres", "dsn", "table"}.
"""
from mycelium import FileLedgerStorage, PostgresLedgerStorage, RedisLedgerStorage


def storage_from_spec(spec):
    if spec["kind"] == "redis":
        return RedisLedgerStorage(spec["url"], prefix=spec["prefix"])
    if spec["kind"] == "postgres":
        return PostgresLedgerStorage(spec["dsn"], table=spec["table"])
    return FileLedgerStorage(spec["path"])
