// The process-local store (also the ledger's default). It lives in core because it needs no client library.
export { MemoryLedgerStorage, type MemoryLedgerStorageOptions } from "../core/storage/memory.ts"
