export * from "../storage/contract.ts"
export * from "../storage/memory.ts"
export * from "./action-ledger.ts"
export * from "./clock.ts"
export type { ClaimOutcome } from "./engine/claim.ts"
export type {
  ListTransitionsOptions,
  MarkWorkerDeadOptions,
  ReleaseOptions,
  WaitOptions,
} from "./engine/operators.ts"
export type { LedgeredTool, LedgeredToolOptions, ToolBody } from "./engine/tool.ts"
export { TransitionContext } from "./engine/tool.ts"
export * from "./errors.ts"
export * from "./machine/gates.ts"
export * from "./model/binding.ts"
export * from "./model/canonical.ts"
export * from "./model/entry.ts"
export * from "./model/enums.ts"
export * from "./model/identity.ts"
export * from "./model/reconcile.ts"
export { configureSha256, type Sha256HexImpl, sha256, sha256Hex, sha256HexJs, toHex } from "./model/sha256.ts"
