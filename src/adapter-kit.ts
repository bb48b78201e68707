// `mycelium-runtime/adapter-kit`: what a storage-adapter author needs beyond the public API. The row codec (the
// Python original's snake_case payload), the atomic claim and compare-and-set rules backends evaluate inside their
// one atomic step, the fail-closed wrapper, and the hashing and number-formatting helpers the keys are built from.
// Documented in docs/adapter-kit.md. Everything here is stable API for adapters, not for applications.

export { MyceliumError } from "./core/errors.ts"
export {
  LedgerDispatchOverflowError,
  LedgerError,
  LedgerOutcomeAlreadySetError,
  LedgerRowError,
  LedgerStaleFenceError,
  LedgerStorageUnavailableError,
} from "./core/ledger/errors.ts"
export {
  decideClaim,
  dispatchIdOf,
  matchesExpectation,
  refuseStaleSet,
  staleSetFence,
} from "./core/ledger/machine/atomic.ts"
export {
  type ClaimClassification,
  classifyClaim,
} from "./core/ledger/machine/gates.ts"
export { stampClaim } from "./core/ledger/machine/transitions.ts"
export { pythonFloatRepr, toJsonValue } from "./core/ledger/model/canonical.ts"
export type { LedgerEntry } from "./core/ledger/model/entry.ts"
export {
  boundaryAtLeast,
  ENTRY_FIELDS,
  entryFromRow,
  entryToRow,
  hasWorkerDeathEvidence,
  type LedgerEntryInit,
  type LedgerRow,
  legacyStatusFor,
  needsRepair,
  newEntry,
  repairFields,
} from "./core/ledger/model/entry.ts"
export {
  isSideEffectBoundary,
  isTerminalOutcome,
  LEDGER_ENTRY_SCHEMA_VERSION,
  TRANSITION_SCHEMA,
} from "./core/ledger/model/enums.ts"
export { buildTransitionPreimage, preimageJson } from "./core/ledger/model/identity.ts"
export { sha256HexJs, toHex } from "./core/ledger/model/sha256.ts"
// Receipt stores of one's own: the original's JSONL line, and reading it back so signatures still verify.
export { parseReceiptJson, receiptExportLine, receiptJsonLine } from "./core/receipts/record.ts"
// ...and their pages: the bounds a `listPage` options object names, and the page cut from the receipts scanned.
export { cutPage, matchesList, PAGE_SCAN_FACTOR, pageBounds } from "./core/receipts/store.ts"
// The contract itself and the errors a backend throws, so an adapter needs one import.
export type {
  ClaimOptions,
  ClaimResult,
  LedgerStorage,
  ListOptions,
  StorageLimits,
  TransitionExpectation,
} from "./core/storage/contract.ts"
// A store that declares limits checks a claim with it: a row it could not keep, or keep with a failure's text.
export { refuseUnkeepableClaim } from "./core/storage/limits.ts"
export { SafeStorage } from "./core/storage/safe-storage.ts"
// A store that declares `limits.validUnicodeOnly` refuses a row holding U+0000 or an unpaired surrogate with it, and
// lists nothing for a prefix holding one.
export { keepableJson, keepablePayload, listsNothing } from "./core/storage/text.ts"
