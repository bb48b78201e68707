import { ToolTransitionBinding, type ToolTransitionBindingInit } from "./binding.ts"
import { type ClaimContext, type ClaimOutcome, type ClaimRequest, claimTransition } from "./claim.ts"
import { type Clock, systemClock } from "./clock.ts"
import { type Decision, hasAllowedDecision, type LedgerEntry, resolvedOutcome } from "./entry.ts"
import type {
  ArgsDriftPolicy,
  RequestIdentityPolicy,
  SideEffectBoundary,
  UnclassifiedPolicy,
} from "./enums.ts"
import { LedgerError, LedgerOutcomeAlreadySetError, LedgerUnknownRequestError } from "./errors.ts"
import type { CallMeta } from "./identity.ts"
import { MemoryLedgerStorage } from "./memory-storage.ts"
import {
  type ListTransitionsOptions,
  listTransitions,
  type MarkWorkerDeadOptions,
  markWorkerDeadFor,
  type ReleaseOptions,
  release,
  type WaitOptions,
  waitForTransition,
} from "./operators.ts"
import type { DecisionPredicate, Reconciler } from "./reconcile.ts"
import { type UnstorableReason, unstorableReason, unstorableRow } from "./result-limits.ts"
import {
  blockedRow,
  boundaryRow,
  completedRow,
  decisionRow,
  type FreshRowInit,
  failedRow,
  freshRow,
  unknownRow,
} from "./rows.ts"
import { SafeStorage } from "./safe-storage.ts"
import type { LedgerStorage, TransitionExpectation } from "./storage.ts"
import {
  createLedgeredTool,
  type LedgeredTool,
  type LedgeredToolOptions,
  prepareCall,
  type ToolBody,
} from "./tool.ts"

export interface ActionLedgerOptions {
  /** Defaults to a process-local `MemoryLedgerStorage`. */
  storage?: LedgerStorage
  /** Seconds a claim is leased; `<= 0` means unbounded. Default 3600. */
  leaseTtl?: number
  /** Seconds between automatic lease renewals while a body runs; default `leaseTtl / 3`, `<= 0` disables. */
  leaseRenewInterval?: number | null
  /** Seconds between polls of another worker's transition. Default 0.05. */
  pollInterval?: number
  /** Seconds a redispatch waits for another worker before `LedgerPollTimeoutError`; `null` waits forever. Default 300. */
  pollTimeout?: number | null
  reconciler?: Reconciler
  /** Raise `LedgerSoftBlockError` for BLOCKED/UNKNOWN reads instead of re-running them. */
  deferReadOnlyUnknown?: boolean
  /** Tools without a binding: `warn` keeps legacy dedupe, `strict` treats them as non_idempotent_mutate. */
  unclassifiedPolicy?: UnclassifiedPolicy
  onArgsDrift?: ArgsDriftPolicy
  /** Reclaim a lapsed lease only once the worker looks dead (operator assertion or silent heartbeat). */
  reclaimRequiresDeathSignal?: boolean
  /** Seconds without a heartbeat after which a worker counts as dead. Default `2 * leaseTtl`. */
  presumedDeadAfter?: number | null
  requestIdentityPolicy?: RequestIdentityPolicy
  /** This worker's name in rows it claims. Default: one random id per running program. */
  owner?: string
  /** Time in epoch seconds; tests pass a `ManualClock`. */
  clock?: Clock | { now(): number }
  /** Checks run before any claim; a denial refuses the call without writing. */
  predicates?: readonly DecisionPredicate[]
  /** Where one-time warnings go. Default `console.warn`. */
  onWarning?: (message: string) => void
}

/** Who holds a claim: every post-claim mutation must present the claim's fence. */
export interface FenceGuard {
  readonly fence: number
  readonly owner?: string | null
}

/** A manual claim: for integrations that drive the ledger themselves instead of `ledger.tool()`. */
export interface ManualClaimRequest {
  readonly tool: string
  /** The storage key. Omitted: derived from `meta` and the binding exactly as `ledger.tool()` derives it. */
  readonly requestId?: string
  readonly args?: Readonly<Record<string, unknown>>
  readonly binding?: ToolTransitionBinding | ToolTransitionBindingInit
  readonly meta?: CallMeta
  /** A decision made before the claim rides on the claim write (phase ATTEMPTING), saving `recordDecision`. */
  readonly decision?: Decision
  /** Seconds this claim is leased. Default the ledger's `leaseTtl`. */
  readonly leaseTtl?: number
}

const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e))

// Made on first use: workerd forbids random values while a module loads, so nothing here may run at import.
let processOwner: string | null = null
function defaultOwner(): string {
  processOwner ??= `ts-${globalThis.crypto.randomUUID().slice(0, 8)}`
  return processOwner
}

/**
 * The action ledger: one durable row per tool transition, claimed before the tool runs, fenced on every write.
 * A redispatched call returns the stored result, waits for the live one, or refuses when the outcome is ambiguous.
 */
export class ActionLedger {
  readonly storage: LedgerStorage
  readonly leaseTtl: number
  readonly leaseRenewInterval: number
  readonly pollInterval: number
  readonly pollTimeout: number | null
  readonly owner: string
  readonly clock: Clock
  readonly requestIdentityPolicy: RequestIdentityPolicy
  readonly unclassifiedPolicy: UnclassifiedPolicy
  readonly predicates: readonly DecisionPredicate[]
  readonly reconciler: Reconciler | null
  /** @internal */
  readonly store: SafeStorage
  /** @internal */
  readonly claimContext: ClaimContext
  readonly #onWarning: (message: string) => void
  readonly #warned = new Set<string>()

  constructor(options: ActionLedgerOptions = {}) {
    this.storage = options.storage ?? new MemoryLedgerStorage()
    this.store = new SafeStorage(this.storage)
    this.leaseTtl = options.leaseTtl ?? 3600
    const renew = options.leaseRenewInterval ?? null
    this.leaseRenewInterval = renew === null ? Math.max(this.leaseTtl / 3, 0.01) : renew
    this.pollInterval = options.pollInterval ?? 0.05
    this.pollTimeout = options.pollTimeout === undefined ? 300 : options.pollTimeout
    this.owner = options.owner ?? defaultOwner()
    const c = options.clock
    this.clock = !c ? systemClock : "sleep" in c ? c : { now: () => c.now(), sleep: systemClock.sleep }
    this.requestIdentityPolicy = options.requestIdentityPolicy ?? "derived"
    this.unclassifiedPolicy = options.unclassifiedPolicy ?? "warn"
    this.predicates = options.predicates ?? []
    this.reconciler = options.reconciler ?? null
    this.#onWarning = options.onWarning ?? ((m) => console.warn(`[mycelium] ${m}`))
    for (const [name, v] of [
      ["onArgsDrift", options.onArgsDrift ?? "soft"],
      ["unclassifiedPolicy", this.unclassifiedPolicy],
      ["requestIdentityPolicy", this.requestIdentityPolicy],
    ] as const) {
      const allowed = {
        onArgsDrift: ["off", "soft", "hard"],
        unclassifiedPolicy: ["warn", "strict"],
        requestIdentityPolicy: ["derived", "require_explicit"],
      }[name]
      if (!allowed.includes(v))
        throw new RangeError(`${name} must be one of ${allowed.join(", ")}, got '${v}'`)
    }
    this.claimContext = {
      store: this.store,
      clock: this.clock,
      reconciler: this.reconciler,
      deferReadOnlyUnknown: options.deferReadOnlyUnknown ?? false,
      onArgsDrift: options.onArgsDrift ?? "soft",
      reclaimRequiresDeathSignal: options.reclaimRequiresDeathSignal ?? false,
      presumedDeadAfter: options.presumedDeadAfter ?? 2 * Math.max(this.leaseTtl, 0),
      warn: (key, message) => this.warnOnce(key, message),
    }
  }

  /** Wraps `fn` so every call goes through the ledger. See `LedgeredToolOptions`. */
  tool<A extends Record<string, unknown>, R>(
    options: LedgeredToolOptions,
    fn: ToolBody<A, R>,
  ): LedgeredTool<A, R> {
    return createLedgeredTool(this, options, fn)
  }

  /** @internal one-time warnings per key. */
  warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return
    this.#warned.add(key)
    this.#onWarning(message)
  }

  /** @internal */
  warn(message: string): void {
    this.#onWarning(message)
  }

  get(requestId: string): Promise<LedgerEntry | null> {
    return this.store.get(requestId)
  }

  /**
   * Claims a transition by hand. `owned: true` means the caller must run the effect and then `complete` or
   * `fail` with the returned fence; `owned: false` carries the stored COMPLETED row. Rows claimed here start in
   * phase INTENDED: call `recordDecision` before the effect (the effect-commit protocol).
   */
  async claim(request: ManualClaimRequest): Promise<ClaimOutcome> {
    const binding = request.binding ? ToolTransitionBinding.from(request.binding) : null
    const meta =
      request.requestId === undefined
        ? (request.meta ?? {})
        : { ...request.meta, requestId: request.requestId }
    const decision = request.decision ?? null
    const call = prepareCall(
      this,
      request.tool,
      binding,
      request.args ?? {},
      meta,
      () => decision,
      request.leaseTtl === undefined ? {} : { leaseTtl: request.leaseTtl },
    )
    return claimTransition(this.claimContext, call.request, call.mode)
  }

  /** @internal the claim loop, for the tool wrapper. */
  runClaim(request: ClaimRequest, mode: "read" | "side_effect" | "unclassified"): Promise<ClaimOutcome> {
    return claimTransition(this.claimContext, request, mode)
  }

  // ---- fenced mutations ---------------------------------------------------------------------------------

  /** @internal compare-and-set `next` over the row the writer holds; a lost race throws with the reason. */
  async casFrom(
    current: LedgerEntry,
    next: LedgerEntry,
    expect: TransitionExpectation,
    op: string,
  ): Promise<LedgerEntry> {
    if (await this.store.tryTransition(next, expect)) return next
    const now = this.clock.now()
    const row = await this.store.get(current.requestId)
    const hints: string[] = []
    if (row && expect.owner != null && row.owner !== expect.owner)
      hints.push(`owner is ${row.owner}, expected ${expect.owner}`)
    if (row && row.fence !== expect.fence) hints.push(`fence is ${row.fence}, expected ${expect.fence}`)
    if (row && expect.effectPhase && row.effectPhase !== expect.effectPhase)
      hints.push(`effect_phase is ${row.effectPhase}, expected ${expect.effectPhase}`)
    throw new LedgerOutcomeAlreadySetError(
      `Cannot ${op} request '${current.requestId}': stored outcome is ${row ? resolvedOutcome(row, now) : "missing"}, ` +
        `expected one of [${expect.outcomes.join(", ")}]${hints.length ? ` (${hints.join("; ")})` : ""}`,
    )
  }

  async #held(requestId: string, guard: FenceGuard | undefined, op: string): Promise<LedgerEntry> {
    if (!guard || typeof guard.fence !== "number") throw new LedgerError(`${op} requires the claim fence`)
    const row = await this.store.get(requestId)
    if (!row) throw new LedgerUnknownRequestError(`Cannot ${op} unknown request '${requestId}'`)
    return row
  }

  #expect(guard: FenceGuard, extra: Partial<TransitionExpectation> = {}): TransitionExpectation {
    return { outcomes: ["IN_FLIGHT"], fence: guard.fence, owner: guard.owner ?? null, ...extra }
  }

  /** @internal complete from the row the owner holds (one write). */
  completeHeld(current: LedgerEntry, result: unknown): Promise<LedgerEntry> {
    return this.#completeWith(current, () => this.#completedOrUnstorable(current, result))
  }

  #completeWith(current: LedgerEntry, row: () => LedgerEntry): Promise<LedgerEntry> {
    if (current.effectProtocolRequired && !hasAllowedDecision(current)) {
      throw new LedgerOutcomeAlreadySetError(
        `Cannot complete request '${current.requestId}': no allowed decision recorded (effect-commit protocol)`,
      )
    }
    const expect = this.#expect(current, current.effectProtocolRequired ? { effectPhase: "ATTEMPTING" } : {})
    return this.casFrom(current, row(), expect, "complete")
  }

  /**
   * Completes without the result, which the caller found too big, too deep or not JSON for the store (a remote
   * client checks before sending it). Replays raise `LedgerResultUnstorableError` naming `limit`.
   */
  async completeUnstorable(
    requestId: string,
    limit: UnstorableReason,
    message: string,
    guard: FenceGuard,
  ): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "complete")
    const current = { ...row, fence: guard.fence, owner: guard.owner ?? row.owner }
    return this.#completeWith(current, () =>
      unstorableRow(completedRow(current, null, this.clock.now()), limit, message),
    )
  }

  /** The completion row, or (result too big, too deep or not JSON for the store) a COMPLETED row that says so. */
  #completedOrUnstorable(current: LedgerEntry, result: unknown): LedgerEntry {
    const now = this.clock.now()
    let next: LedgerEntry
    let bad: { reason: UnstorableReason; message: string } | null
    try {
      next = completedRow(current, result, now)
      bad = this.storage.limits ? unstorableReason(next, this.storage.limits) : null
    } catch (e) {
      // A cycle overflows the JSON conversion.
      next = completedRow(current, null, now)
      bad = { reason: "not_serializable", message: `the result is not JSON (${errorMessage(e)})` }
    }
    if (!bad) return next
    this.warn(
      `the result of '${current.tool}' request '${current.requestId}' was not stored: ${bad.message}; ` +
        "the row is COMPLETED without it and replays raise LedgerResultUnstorableError",
    )
    return unstorableRow(next, bad.reason, bad.message)
  }

  async complete(requestId: string, result: unknown, guard: FenceGuard): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "complete")
    return this.completeHeld({ ...row, fence: guard.fence, owner: guard.owner ?? row.owner }, result)
  }

  /** @internal */
  failHeld(current: LedgerEntry, error: string, afterEffect: boolean): Promise<LedgerEntry> {
    return this.casFrom(
      current,
      failedRow(current, error, this.clock.now(), afterEffect),
      this.#expect(current),
      "fail",
    )
  }

  async fail(
    requestId: string,
    error: string,
    guard: FenceGuard & { failedAfterEffect?: boolean },
  ): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "fail")
    return this.failHeld(
      { ...row, fence: guard.fence, owner: guard.owner ?? row.owner },
      error,
      guard.failedAfterEffect ?? false,
    )
  }

  /** @internal */
  markUnknownHeld(current: LedgerEntry, error: string): Promise<LedgerEntry> {
    return this.casFrom(
      current,
      unknownRow(current, error, this.clock.now()),
      this.#expect(current),
      "mark unknown",
    )
  }

  async markUnknown(requestId: string, error: string, guard: FenceGuard): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "mark unknown")
    return this.markUnknownHeld({ ...row, fence: guard.fence, owner: guard.owner ?? row.owner }, error)
  }

  async markBlocked(requestId: string, error: string, guard: FenceGuard): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "mark blocked")
    const current = { ...row, fence: guard.fence, owner: guard.owner ?? row.owner }
    return this.casFrom(
      current,
      blockedRow(current, error, this.clock.now()),
      this.#expect(current),
      "mark blocked",
    )
  }

  #effectExpect(current: LedgerEntry, op: string): TransitionExpectation {
    if (current.effectProtocolRequired && !hasAllowedDecision(current)) {
      throw new LedgerOutcomeAlreadySetError(
        `Cannot ${op} for request '${current.requestId}': no allowed decision recorded`,
      )
    }
    return this.#expect(current, current.effectProtocolRequired ? { effectPhase: "ATTEMPTING" } : {})
  }

  /** @internal */
  advanceBoundaryHeld(current: LedgerEntry, boundary: SideEffectBoundary): Promise<LedgerEntry> {
    // A weaker value still performs the CAS, so a stale fence fails even when nothing would change.
    return this.casFrom(
      current,
      boundaryRow(current, boundary),
      this.#effectExpect(current, "advance boundary"),
      "advance boundary",
    )
  }

  async advanceBoundary(
    requestId: string,
    boundary: SideEffectBoundary,
    guard: FenceGuard,
  ): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "advance boundary")
    return this.advanceBoundaryHeld({ ...row, fence: guard.fence, owner: guard.owner ?? row.owner }, boundary)
  }

  /** @internal */
  attachRefHeld(current: LedgerEntry, ref: string): Promise<LedgerEntry> {
    const expect = this.#effectExpect(current, "attach external operation ref")
    return this.casFrom(
      current,
      { ...current, externalOperationRef: String(ref) },
      expect,
      "attach external operation ref",
    )
  }

  async attachExternalOperationRef(requestId: string, ref: string, guard: FenceGuard): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "attach external operation ref")
    return this.attachRefHeld({ ...row, fence: guard.fence, owner: guard.owner ?? row.owner }, ref)
  }

  /** @internal */
  async renewHeld(current: LedgerEntry, leaseTtl?: number): Promise<LedgerEntry> {
    const ttl = leaseTtl ?? this.leaseTtl
    if (!(ttl > 0)) throw new LedgerError("renewLease needs a positive lease ttl")
    const now = this.clock.now()
    if (current.leaseUntil !== null && now >= current.leaseUntil) {
      throw new LedgerError(
        `Cannot renew request '${current.requestId}': lease already expired — reclaim or reconcile instead`,
      )
    }
    const next = { ...current, leaseUntil: now + ttl, lastHeartbeatAt: now }
    return this.casFrom(current, next, this.#expect(current, { leaseHeldAt: now }), "renew lease")
  }

  async renewLease(requestId: string, guard: FenceGuard & { leaseTtl?: number }): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "renew lease")
    return this.renewHeld({ ...row, fence: guard.fence, owner: guard.owner ?? row.owner }, guard.leaseTtl)
  }

  /** Records the decision before the effect (moves phase INTENDED → ATTEMPTING, or ABORTED if denied). */
  async recordDecision(requestId: string, decision: Decision, guard: FenceGuard): Promise<LedgerEntry> {
    const row = await this.#held(requestId, guard, "record decision")
    const current = { ...row, fence: guard.fence, owner: guard.owner ?? row.owner }
    return this.casFrom(
      current,
      decisionRow(current, decision),
      this.#expect(current, { effectPhase: "INTENDED" }),
      "record decision",
    )
  }

  // ---- operators (operators.ts) ------------------------------------------------------------------------

  /**
   * An operator's verdict on an ambiguous transition. `completed` stores the result; `not_executed` lets the next
   * redispatch run the tool exactly once more. One-shot per transition.
   */
  release(requestId: string, options: ReleaseOptions): Promise<LedgerEntry> {
    return release(this, requestId, options)
  }

  /** An operator asserts the worker behind a transition is dead, so a death-gated reclaim may proceed. */
  markWorkerDeadFor(requestId: string, options: MarkWorkerDeadOptions): Promise<LedgerEntry> {
    return markWorkerDeadFor(this, requestId, options)
  }

  /** Transitions for operators, oldest first. `stuck` selects what needs a human or a reconciler. */
  listTransitions(options: ListTransitionsOptions = {}): Promise<LedgerEntry[]> {
    return listTransitions(this, options)
  }

  /** Waits until the transition leaves IN_FLIGHT (EXPIRED counts as done). Never writes. */
  waitForTransition(requestId: string, options: WaitOptions = {}): Promise<LedgerEntry> {
    return waitForTransition(this, requestId, options)
  }

  /** @internal a fresh in-flight row for a call (rows.ts). */
  freshEntry(init: FreshRowInit): LedgerEntry {
    return freshRow(this.owner, this.clock.now(), init)
  }
}
