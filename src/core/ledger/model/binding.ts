import { LedgerConfigError, ToolCapabilityDeclarationError } from "../errors.ts"
import {
  CAPABILITY_RANK,
  CLASS_DEFAULTS,
  type LegacySideEffectAlias,
  oneOf,
  parseRetryPermission,
  parseSideEffectBoundary,
  parseSideEffectClass,
  parseSpendability,
  parseToolCapability,
  type RetryPermission,
  type SideEffectBoundary,
  type SideEffectClass,
  type Spendability,
  type ToolCapability,
} from "./enums.ts"

/** Scope fields a binding may read from the tool's arguments. */
export type ScopeField = "thread_id" | "run_id" | "node"

const SCOPE_FIELDS: readonly ScopeField[] = ["thread_id", "run_id", "node"]

/** What a caller declares for a ledgered tool; every omitted field takes its class default. */
export interface ToolTransitionBindingInit {
  agentId: string
  policyVersion: string
  /** A canonical class or a legacy alias (`payment`, `read_only`, ...). */
  sideEffectClass: SideEffectClass | LegacySideEffectAlias
  /** Scope field → name of the tool argument that carries it. */
  scopeFrom?: Partial<Record<ScopeField, string>>
  retryPermission?: RetryPermission
  sideEffectBoundaryDefault?: SideEffectBoundary
  spendability?: Spendability
  capability?: ToolCapability
  /** Name of the argument that carries the provider's idempotency key (excluded from the args fingerprint). */
  providerIdempotencyKeyParam?: string
  /** Seconds the provider honours that key. */
  providerIdempotencyKeyTtl?: number
  /** Argument whose value names the transition: request id `"{tool}:{field}:{value}"`. */
  requestIdFrom?: string
}

/** A resolved binding: every policy field filled in. Immutable. */
export interface ToolTransitionBinding {
  readonly agentId: string
  readonly policyVersion: string
  readonly sideEffectClass: SideEffectClass
  readonly scopeFrom: Readonly<Partial<Record<ScopeField, string>>>
  readonly retryPermission: RetryPermission
  readonly sideEffectBoundaryDefault: SideEffectBoundary
  readonly spendability: Spendability
  readonly capability: ToolCapability
  readonly explicitCapability: ToolCapability | null
  readonly providerIdempotencyKeyParam: string | null
  readonly providerIdempotencyKeyTtl: number | null
  readonly requestIdFrom: string | null
}

/** The capability floor for a class: declaring anything looser would let a tool opt into duplicate effects. */
export function capabilityFloor(
  cls: SideEffectClass,
  hasReconciler: boolean,
  hasProviderKey: boolean,
): ToolCapability {
  return CLASS_DEFAULTS[cls][hasReconciler ? 4 : hasProviderKey ? 3 : 2]
}

/** The explicit capability where it is at least as strict as `floor`, else the floor. */
const noLooser = (explicit: ToolCapability | null, floor: ToolCapability): ToolCapability =>
  explicit !== null && CAPABILITY_RANK[explicit] >= CAPABILITY_RANK[floor] ? explicit : floor

/** Capability honesty: an explicit value may tighten the floor, never loosen it. */
export function resolveCapability(
  cls: SideEffectClass,
  explicit: ToolCapability | null | undefined,
  hasReconciler: boolean,
  hasProviderKey: boolean,
): ToolCapability {
  const floor = capabilityFloor(cls, hasReconciler, hasProviderKey)
  if (explicit == null) return floor
  if (CAPABILITY_RANK[explicit] >= CAPABILITY_RANK[floor]) return explicit
  throw new ToolCapabilityDeclarationError(
    `capability '${explicit}' is looser than the floor '${floor}' for side_effect_class '${cls}': it would let ` +
      "this tool silently opt into duplicate effects",
  )
}

/** The capability that governs recovery on a ledger with (or without) a reconciler. Never throws. */
export function effectiveCapability(binding: ToolTransitionBinding, hasReconciler: boolean): ToolCapability {
  const floor = capabilityFloor(
    binding.sideEffectClass,
    hasReconciler,
    binding.providerIdempotencyKeyParam !== null,
  )
  return noLooser(binding.explicitCapability, floor)
}

function forTool(init: ToolTransitionBindingInit): ToolTransitionBinding {
  if (
    !init.agentId ||
    typeof init.agentId !== "string" ||
    !init.policyVersion ||
    typeof init.policyVersion !== "string"
  ) {
    throw new LedgerConfigError(
      "a binding needs agentId and policyVersion: the agent that owns the tool, its policy",
    )
  }
  const cls = parseSideEffectClass(init.sideEffectClass)
  const d = CLASS_DEFAULTS[cls]
  const keyParam = init.providerIdempotencyKeyParam ?? null
  const explicit = init.capability == null ? null : parseToolCapability(init.capability)
  // Validated as if a reconciler existed (the ledger may bind one); stored no looser than the no-reconciler floor.
  resolveCapability(cls, explicit, true, keyParam !== null)
  const capability = noLooser(explicit, capabilityFloor(cls, false, keyParam !== null))
  const ttl = init.providerIdempotencyKeyTtl ?? null
  if (ttl !== null && !(ttl > 0))
    throw new LedgerConfigError("providerIdempotencyKeyTtl must be positive (seconds)")
  const scopeFrom: Partial<Record<ScopeField, string>> = {}
  for (const [key, src] of Object.entries(init.scopeFrom ?? {})) {
    const field = oneOf("a scopeFrom key", SCOPE_FIELDS, key)
    if (typeof src === "string" && src) scopeFrom[field] = src
  }
  return Object.freeze({
    agentId: init.agentId,
    policyVersion: init.policyVersion,
    sideEffectClass: cls,
    scopeFrom: Object.freeze(scopeFrom),
    retryPermission: init.retryPermission ? parseRetryPermission(init.retryPermission) : d[0],
    sideEffectBoundaryDefault: init.sideEffectBoundaryDefault
      ? parseSideEffectBoundary(init.sideEffectBoundaryDefault)
      : "not_crossed",
    spendability: init.spendability ? parseSpendability(init.spendability) : d[1],
    capability,
    explicitCapability: explicit,
    providerIdempotencyKeyParam: keyParam,
    providerIdempotencyKeyTtl: ttl,
    requestIdFrom: init.requestIdFrom ?? null,
  })
}

const isResolved = (b: ToolTransitionBinding | ToolTransitionBindingInit): b is ToolTransitionBinding =>
  "explicitCapability" in b && Object.isFrozen(b)

/** Builds bindings with class defaults filled in. */
export const ToolTransitionBinding = {
  forTool,
  /** Accepts a resolved binding as is, or resolves an init object. */
  from(b: ToolTransitionBinding | ToolTransitionBindingInit): ToolTransitionBinding {
    return isResolved(b) ? b : forTool(b)
  },
}
