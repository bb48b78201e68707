export * from "./action-ledger.ts"
export * from "./binding.ts"
export * from "./canonical.ts"
export type { ClaimOutcome } from "./claim.ts"
export * from "./clock.ts"
export * from "./entry.ts"
export * from "./enums.ts"
export * from "./errors.ts"
export * from "./gates.ts"
export * from "./identity.ts"
export * from "./memory-storage.ts"
export type {
  ListTransitionsOptions,
  MarkWorkerDeadOptions,
  ReleaseOptions,
  WaitOptions,
} from "./operators.ts"
export * from "./reconcile.ts"
export * from "./result-limits.ts"
export { configureSha256, type Sha256HexImpl, sha256, sha256Hex, sha256HexJs, toHex } from "./sha256.ts"
export * from "./storage.ts"
export type { LedgeredTool, LedgeredToolOptions, ToolBody } from "./tool.ts"
export { TransitionContext } from "./tool.ts"
