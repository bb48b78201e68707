import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { testLedgerStorage } from "../conformance/ledger-storage.ts"

testLedgerStorage("memory", () => ({ storage: new MemoryLedgerStorage() }))
