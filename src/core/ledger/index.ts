// The ledger's public surface, listed by hand. Engine internals (core, fenced writes, the claim loop, row builders)
// stay out; helpers for storage-adapter authors are in src/adapter-kit.ts (`mycelium-runtime/adapter-kit`).
export type {
  ClaimOptions,
  ClaimResult,
  LedgerStorage,
  ListOptions,
  StorageLimits,
  TransitionExpectation,
} from "../storage/contract.ts"
export { MemoryLedgerStorage, type MemoryLedgerStorageOptions } from "../storage/memory.ts"
export {
  ActionLedger,
  type ActionLedgerOptions,
  type FailGuard,
  type FenceGuard,
  type LedgeredTool,
  type ManualClaimRequest,
  type RenewLeaseGuard,
} from "./action-ledger.ts"
export { type Clock, systemClock } from "./clock.ts"
export type {
  ListTransitionsOptions,
  MarkWorkerDeadOptions,
  ReleaseOptions,
  WaitOptions,
} from "./engine/operators.ts"
export type { ClaimOutcome } from "./engine/request.ts"
export type { LedgeredToolOptions, ToolBody, TransitionContext } from "./engine/tool.ts"
export {
  LedgerAlreadyResolvedError,
  LedgerConfigError,
  LedgerError,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  type LedgerIdentityConflictErrorInit,
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReceiptUnsignedError,
  LedgerReleaseRefusedError,
  LedgerResultUnstorableError,
  LedgerRowError,
  LedgerSoftBlockError,
  LedgerStaleFenceError,
  LedgerStorageUnavailableError,
  LedgerUnknownRequestError,
  LedgerWorkerAliveError,
  MissingRequestIdentityError,
  ReceiptAppendError,
  ToolCapabilityDeclarationError,
  type UnstorableReason,
} from "./errors.ts"
export { type ScopeField, ToolTransitionBinding, type ToolTransitionBindingInit } from "./model/binding.ts"
export { canonicalJson, type JsonValue } from "./model/canonical.ts"
export {
  type Decision,
  LEASE_LAPSED_ERROR,
  type LedgerEntry,
  leaseLapsed,
  leaseValidity,
  resolvedEffectState,
  resolvedOutcome,
} from "./model/entry.ts"
export {
  type ArgsDriftPolicy,
  EffectState,
  LeaseValidity,
  type LegacySideEffectAlias,
  type LegacyStatus,
  type OperatorResolution,
  ProviderKeyValidity,
  ReconcileStatus,
  type RequestIdentityPolicy,
  RetryPermission,
  SideEffectBoundary,
  SideEffectClass,
  Spendability,
  TerminalOutcome,
  ToolCapability,
  TransitionGate,
  type UnclassifiedPolicy,
} from "./model/enums.ts"
export {
  argsFingerprint,
  type CallMeta,
  type TransitionPreimageInput,
  type TransitionScope,
  transitionKey,
} from "./model/identity.ts"
export type { ReceiptDraft, ReceiptHook, SignedReceipt } from "./model/receipt-hook.ts"
export {
  type DecisionIntent,
  type DecisionPredicate,
  type PredicateVerdict,
  ReconcileResult,
  type Reconciler,
} from "./model/reconcile.ts"
export { configureSha256, type Sha256HexImpl, sha256, sha256Hex } from "./model/sha256.ts"
export {
  parseToolArguments,
  type ToolArgs,
  type ToolArguments,
  ToolArgumentsError,
  type ToolArgumentValue,
} from "./model/tool-arguments.ts"
