// `mycelium-runtime/conformance`: the conformance suites, for authors of storage adapters: LedgerStorage
// (`testLedgerStorage`), TaskStore (`testTaskStore`), ReceiptStore (`testReceiptStore`) and StateFlushStore
// (`testStateFlush`). They define vitest cases (describe/it/expect), so they need `vitest` (an optional peer) and run
// inside a test file: `testLedgerStorage("my store", () => ({ storage: new MyStorage() }))`. Documented in
// docs/adapter-kit.md.

export type {
  LedgerStorageFixture,
  LedgerStorageFixtureFactory,
  ReceiptStoreFixture,
  ReceiptStoreFixtureFactory,
  StateFlushStoreFixture,
  StateFlushStoreFixtureFactory,
  TaskStoreFixture,
  TaskStoreFixtureFactory,
} from "./conformance/factory.ts"
export { testLedgerStorage } from "./conformance/ledger-storage.ts"
export { testReceiptStore } from "./conformance/receipt-store.ts"
export { testStateFlush } from "./conformance/state-flush.ts"
export { testTaskStore } from "./conformance/task-store.ts"
