// String values are the Python original's, byte for byte: they are hashed into transition keys and stored in
// rows that Python workers read too.
import { LedgerConfigError } from "../errors.ts"

/**
 * The enum object of a value list: each value under its upper-cased self (`{ KEYED_MUTATE: "keyed_mutate" }`), as
 * every enum here is keyed. Marked pure at each use, so an application that never reads an enum object drops it.
 */
const enumOf = <const T extends string>(values: readonly T[]): { readonly [V in T as Uppercase<V>]: V } =>
  Object.fromEntries(values.map((v) => [v.toUpperCase(), v])) as never

// Value lists spelled out, and the objects built from them, rather than `Object.values(...)` of literal objects: a
// top-level call keeps every object in an application's bundle even when nothing reads it.
const CLASSES = [
  "read",
  "idempotent_mutate",
  "keyed_mutate",
  "non_idempotent_mutate",
  "irreversible",
] as const
const RETRIES = [
  "safe_retry",
  "retry_only_with_same_provider_idempotency_key",
  "manual_reconciliation_required",
  "never_retry_automatically",
] as const
const SPENDABILITIES = ["multi_use", "single_use", "non_replayable"] as const
const CAPABILITIES = ["idempotent", "queryable", "blind"] as const
const OUTCOMES = [
  "IN_FLIGHT",
  "COMPLETED",
  "FAILED_BEFORE_EFFECT",
  "FAILED_AFTER_EFFECT",
  "EXPIRED",
  "BLOCKED",
  "UNKNOWN",
] as const
const BOUNDARIES = ["not_crossed", "maybe_crossed", "crossed"] as const

export const SideEffectClass = /* @__PURE__ */ enumOf(CLASSES)
export type SideEffectClass = (typeof SideEffectClass)[keyof typeof SideEffectClass]

export const RetryPermission = /* @__PURE__ */ enumOf(RETRIES)
export type RetryPermission = (typeof RetryPermission)[keyof typeof RetryPermission]

export const Spendability = /* @__PURE__ */ enumOf(SPENDABILITIES)
export type Spendability = (typeof Spendability)[keyof typeof Spendability]

export const ToolCapability = /* @__PURE__ */ enumOf(CAPABILITIES)
export type ToolCapability = (typeof ToolCapability)[keyof typeof ToolCapability]

export const TerminalOutcome = /* @__PURE__ */ enumOf(OUTCOMES)
export type TerminalOutcome = (typeof TerminalOutcome)[keyof typeof TerminalOutcome]

export const EffectState = /* @__PURE__ */ enumOf([
  "INTENDED",
  "ATTEMPTING",
  "COMMITTED",
  "ABORTED",
  "UNKNOWN",
])
export type EffectState = (typeof EffectState)[keyof typeof EffectState]

export const SideEffectBoundary = /* @__PURE__ */ enumOf(BOUNDARIES)
export type SideEffectBoundary = (typeof SideEffectBoundary)[keyof typeof SideEffectBoundary]

export const LeaseValidity = /* @__PURE__ */ enumOf(["HELD", "EXPIRED", "UNBOUNDED"])
export type LeaseValidity = (typeof LeaseValidity)[keyof typeof LeaseValidity]

export const ProviderKeyValidity = /* @__PURE__ */ enumOf(["VALID", "EXPIRED", "UNTRACKED"])
export type ProviderKeyValidity = (typeof ProviderKeyValidity)[keyof typeof ProviderKeyValidity]

export const TransitionGate = /* @__PURE__ */ enumOf([
  "ALLOW",
  "RETURN",
  "POLL",
  "RECLAIM",
  "REPAIR",
  "SOFT_BLOCK",
  "HARD_BLOCK",
])
export type TransitionGate = (typeof TransitionGate)[keyof typeof TransitionGate]

export const ReconcileStatus = /* @__PURE__ */ enumOf(["COMPLETED", "NOT_EXECUTED", "UNKNOWN"])
export type ReconcileStatus = (typeof ReconcileStatus)[keyof typeof ReconcileStatus]

/** Legacy `status` column, kept for Python readers. */
export type LegacyStatus = "in-flight" | "completed" | "failed"

export type OperatorResolution = "completed" | "not_executed"
export type UnclassifiedPolicy = "warn" | "strict"
export type ArgsDriftPolicy = "off" | "soft" | "hard"
export type RequestIdentityPolicy = "derived" | "require_explicit"

export const TRANSITION_SCHEMA = "mycelium.transition/v2"
export const LEDGER_ENTRY_SCHEMA_VERSION = 2

/** An older side-effect class name, still parsed to its canonical class (`payment` → `non_idempotent_mutate`). */
export type LegacySideEffectAlias =
  | "read_only"
  | "idempotent_write"
  | "external_api_mutation"
  | "non_idempotent_write"
  | "payment"
  | "email"
  | "subagent"
  | "onchain_action"

const SIDE_EFFECT_ALIASES: Readonly<Record<LegacySideEffectAlias, SideEffectClass>> = {
  read_only: "read",
  idempotent_write: "idempotent_mutate",
  external_api_mutation: "keyed_mutate",
  non_idempotent_write: "non_idempotent_mutate",
  payment: "non_idempotent_mutate",
  email: "non_idempotent_mutate",
  subagent: "non_idempotent_mutate",
  onchain_action: "irreversible",
}

/** Canonical class for a class name or a legacy alias (`payment`, `read_only`, ...). */
export function parseSideEffectClass(value: unknown): SideEffectClass {
  const v = typeof value === "string" ? value.trim() : value
  // Own keys only: `constructor` or `toString` must not resolve through the prototype.
  return typeof v === "string" && Object.hasOwn(SIDE_EFFECT_ALIASES, v)
    ? SIDE_EFFECT_ALIASES[v as LegacySideEffectAlias]
    : parseClass(v)
}

/** `v` if it is one of `values`, else `LedgerConfigError` naming `label` (an option, a field). */
export function oneOf<T extends string>(label: string, values: readonly T[], v: unknown): T {
  if ((values as readonly unknown[]).includes(v)) return v as T
  throw new LedgerConfigError(`${label} must be one of ${values.join(", ")}, got '${String(v)}'`)
}

const parser =
  <T extends string>(label: string, values: readonly T[]): ((v: unknown) => T) =>
  (v) =>
    oneOf(label, values, v)

// Marked pure so a bundle that never parses a binding (an adapter, say) drops the parsers and their lists.
const parseClass = /* @__PURE__ */ parser("side_effect_class", CLASSES)
export const parseRetryPermission = /* @__PURE__ */ parser("retry_permission", RETRIES)
export const parseSpendability = /* @__PURE__ */ parser("spendability", SPENDABILITIES)
export const parseToolCapability = /* @__PURE__ */ parser("capability", CAPABILITIES)
export const parseSideEffectBoundary = /* @__PURE__ */ parser("side_effect_boundary", BOUNDARIES)
export const parseTerminalOutcome = /* @__PURE__ */ parser("outcome", OUTCOMES)

// Sets, not arrays: these run several times on every ledgered call.
const OUTCOME_SET: ReadonlySet<unknown> = new Set(OUTCOMES)
const BOUNDARY_SET: ReadonlySet<unknown> = /* @__PURE__ */ new Set(BOUNDARIES)
export const isTerminalOutcome = (v: unknown): v is TerminalOutcome => OUTCOME_SET.has(v)
export const isSideEffectBoundary = (v: unknown): v is SideEffectBoundary => BOUNDARY_SET.has(v)

export const isConsequential = (c: SideEffectClass): boolean => c !== "read"
export const isStrictSideEffect = (c: SideEffectClass): boolean =>
  c === "non_idempotent_mutate" || c === "irreversible"
export const blocksOnAmbiguousReplay = (s: Spendability): boolean =>
  s === "single_use" || s === "non_replayable"

// Each value's place in its list, which runs from the loosest to the strictest.
const rankOf = <T extends string>(values: readonly T[]): Readonly<Record<T, number>> =>
  Object.fromEntries(values.map((v, i) => [v, i])) as never

export const BOUNDARY_RANK = /* @__PURE__ */ rankOf(BOUNDARIES)
export const CAPABILITY_RANK = /* @__PURE__ */ rankOf(CAPABILITIES)

/**
 * Per class: retry permission, spendability, and the capability floor without a reconciler or provider-key
 * parameter, with a provider-key parameter, and with a reconciler. Rows rather than objects of named fields: the
 * table ships in every bundle that binds a tool.
 */
export type ClassDefaults = readonly [
  retryPermission: RetryPermission,
  spendability: Spendability,
  capability: ToolCapability,
  capabilityWithProviderKey: ToolCapability,
  capabilityWithReconciler: ToolCapability,
]

export const CLASS_DEFAULTS: Readonly<Record<SideEffectClass, ClassDefaults>> = {
  read: ["safe_retry", "multi_use", "idempotent", "idempotent", "idempotent"],
  idempotent_mutate: ["safe_retry", "multi_use", "idempotent", "idempotent", "idempotent"],
  keyed_mutate: [
    "retry_only_with_same_provider_idempotency_key",
    "single_use",
    "blind",
    "queryable",
    "queryable",
  ],
  non_idempotent_mutate: ["manual_reconciliation_required", "single_use", "blind", "blind", "queryable"],
  irreversible: ["never_retry_automatically", "non_replayable", "blind", "blind", "blind"],
}
