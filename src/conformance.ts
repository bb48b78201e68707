// `mycelium-runtime/conformance`: the storage conformance suite, for authors of LedgerStorage adapters. It defines
// vitest cases (describe/it/expect), so it needs `vitest` (an optional peer) and runs inside a test file:
// `testLedgerStorage("my store", () => ({ storage: new MyStorage() }))`. Documented in docs/adapter-kit.md.

export type { StorageFactory, StorageFactoryResult } from "./conformance/factory.ts"
export { testLedgerStorage } from "./conformance/ledger-storage.ts"
