// The receipt-store and state-flush conformance suites over the memory stores, in every runtime (the task store's
// runs from task-ledger.test.ts). Each runtime's own stores run them from its glue.
import { testReceiptStore, testStateFlush } from "../../src/conformance.ts"
import { MemoryReceiptStore } from "../../src/receipts.ts"
import { MemoryStateFlushStore } from "../../src/state.ts"

testReceiptStore("memory", () => ({ storage: new MemoryReceiptStore() }))
testStateFlush("memory", () => ({ storage: new MemoryStateFlushStore() }))
