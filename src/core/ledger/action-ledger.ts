import { ToolTransitionBinding, type ToolTransitionBindingInit } from "./binding.ts"
import type { JsonValue } from "./canonical.ts"
import { type ClaimContext, type ClaimOutcome, type ClaimRequest, claimTransition } from "./claim.ts"
import { type Clock, systemClock } from "./clock.ts"
import {
  type Decision,
  hasAllowedDecision,
  hasWorkerDeathEvidence,
  type LedgerEntry,
  resolvedOutcome,
} from "./entry.ts"
import {
  type ArgsDriftPolicy,
  LEDGER_ENTRY_SCHEMA_VERSION,
  type RequestIdentityPolicy,
  type SideEffectBoundary,
  type TerminalOutcome,
  type UnclassifiedPolicy,
} from "./enums.ts"
import {
  LedgerAlreadyResolvedError,
  LedgerError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  LedgerWorkerAliveError,
} from "./errors.ts"
import { type CallMeta, metaToKwargs, type TransitionScope } from "./identity.ts"
import { MemoryLedgerStorage } from "./memory-storage.ts"
import { ageString, remainingString } from "./messages.ts"
import type { DecisionPredicate, Reconciler } from "./reconcile.ts"
import { blockedRow, boundaryRow, completedRow, decisionRow, failedRow, unknownRow } from "./rows.ts"
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
  /** This worker's name in rows it claims. Default: a random id per process. */
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

export interface ReleaseOptions {
  readonly verified: "completed" | "not_executed"
  /** For `completed`: the result later calls receive. */
  readonly result?: unknown
  readonly by: string
  readonly reason: string
}

export interface MarkWorkerDeadOptions {
  readonly by: string
  readonly reason: string
  readonly overrideHeartbeat?: boolean
}

export interface ListTransitionsOptions {
  /** BLOCKED, UNKNOWN, FAILED_AFTER_EFFECT, EXPIRED, or IN_FLIGHT older than `inFlightStuckAfter`. */
  readonly stuck?: boolean
  readonly tool?: string
  readonly outcome?: TerminalOutcome
  readonly parentRequestId?: string
  readonly inFlightStuckAfter?: number
}

export interface WaitOptions {
  readonly pollInterval?: number
  readonly pollTimeout?: number | null
  readonly signal?: AbortSignal
}

/** A manual claim: for integrations that drive the ledger themselves instead of `ledger.tool()`. */
export interface ManualClaimRequest {
  readonly tool: string
  readonly requestId: string
  readonly args?: Readonly<Record<string, unknown>>
  readonly binding?: ToolTransitionBinding | ToolTransitionBindingInit
  readonly meta?: CallMeta
}

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
    const call = prepareCall(
      this,
      request.tool,
      binding,
      request.args ?? {},
      { ...request.meta, requestId: request.requestId },
      () => null,
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
    if (!row) throw new LedgerError(`Cannot ${op} unknown request '${requestId}'`)
    return row
  }

  #expect(guard: FenceGuard, extra: Partial<TransitionExpectation> = {}): TransitionExpectation {
    return { outcomes: ["IN_FLIGHT"], fence: guard.fence, owner: guard.owner ?? null, ...extra }
  }

  /** @internal complete from the row the owner holds (one write). */
  completeHeld(current: LedgerEntry, result: unknown): Promise<LedgerEntry> {
    if (current.effectProtocolRequired && !hasAllowedDecision(current)) {
      throw new LedgerOutcomeAlreadySetError(
        `Cannot complete request '${current.requestId}': no allowed decision recorded (effect-commit protocol)`,
      )
    }
    const expect = this.#expect(current, current.effectProtocolRequired ? { effectPhase: "ATTEMPTING" } : {})
    return this.casFrom(current, completedRow(current, result, this.clock.now()), expect, "complete")
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

  // ---- operators -------------------------------------------------------------------------------------------

  /**
   * An operator's verdict on an ambiguous transition. `completed` stores the result; `not_executed` lets the next
   * redispatch run the tool exactly once more. One-shot per transition.
   */
  async release(requestId: string, options: ReleaseOptions): Promise<LedgerEntry> {
    const { verified, by, reason } = options
    if (verified !== "completed" && verified !== "not_executed") {
      throw new LedgerReleaseRefusedError(
        `verified must be 'completed' or 'not_executed', got '${String(verified)}'`,
      )
    }
    if (!by?.trim()) throw new LedgerReleaseRefusedError("release requires 'by' (who verified the outcome)")
    if (!reason?.trim()) throw new LedgerReleaseRefusedError("release requires a 'reason'")
    const row = await this.store.get(requestId)
    if (!row) throw new LedgerReleaseRefusedError(`Cannot release unknown request '${requestId}'`)
    if (row.operatorResolution) {
      throw new LedgerAlreadyResolvedError(
        `Request '${requestId}' was already released as ${row.operatorResolution} by ${row.resolvedBy}`,
      )
    }
    const now = this.clock.now()
    const resolved = resolvedOutcome(row, now)
    if (resolved === "COMPLETED")
      throw new LedgerReleaseRefusedError(`Request '${requestId}' is COMPLETED; nothing to release`)
    if (resolved === "IN_FLIGHT") {
      throw new LedgerReleaseRefusedError(
        `Request '${requestId}' is IN_FLIGHT with a live lease; wait for the lease to expire (EXPIRED is releasable)`,
      )
    }
    const cc = this.claimContext
    if (
      resolved === "EXPIRED" &&
      cc.reclaimRequiresDeathSignal &&
      !hasWorkerDeathEvidence(row, now, cc.presumedDeadAfter)
    ) {
      throw this.#aliveError(row, now)
    }
    const stamps = {
      resolvedBy: by,
      resolutionReason: reason,
      resolvedAt: now,
      releasedFromOutcome: resolved,
    }
    let next: LedgerEntry
    if (verified === "completed") {
      if (row.effectProtocolRequired && !row.decision?.allowed) {
        throw new LedgerReleaseRefusedError(
          `Request '${requestId}' has no allowed decision; it cannot have completed`,
        )
      }
      next = { ...completedRow(row, options.result ?? null, now), operatorResolution: "completed", ...stamps }
    } else {
      next = { ...row, operatorResolution: "not_executed", ...stamps }
    }
    const ok = await this.store.tryTransition(next, {
      outcomes: ["IN_FLIGHT", "BLOCKED", "UNKNOWN", "FAILED_AFTER_EFFECT", "FAILED_BEFORE_EFFECT"],
      owner: row.owner,
      fence: row.fence,
    })
    if (!ok)
      throw new LedgerAlreadyResolvedError(`Cannot release request '${requestId}': transition superseded`)
    return next
  }

  #aliveError(row: LedgerEntry, now: number): LedgerWorkerAliveError {
    const last = row.lastHeartbeatAt ?? row.startedAt
    const grace = this.claimContext.presumedDeadAfter - (now - last)
    return new LedgerWorkerAliveError(
      `Cannot release request '${row.requestId}': EXPIRED but worker appears alive (${ageString(now - last)}) — ` +
        `grace window elapses in ${remainingString(grace)}. Use markWorkerDeadFor() first, or wait for the grace window.`,
    )
  }

  /** An operator asserts the worker behind a transition is dead, so a death-gated reclaim may proceed. */
  async markWorkerDeadFor(requestId: string, options: MarkWorkerDeadOptions): Promise<LedgerEntry> {
    if (!options.by?.trim() || !options.reason?.trim()) {
      throw new LedgerReleaseRefusedError("markWorkerDeadFor requires 'by' and 'reason'")
    }
    const row = await this.store.get(requestId)
    if (!row)
      throw new LedgerReleaseRefusedError(`Cannot mark worker dead for unknown request '${requestId}'`)
    const now = this.clock.now()
    const resolved = resolvedOutcome(row, now)
    if (resolved !== "IN_FLIGHT" && resolved !== "EXPIRED") {
      throw new LedgerReleaseRefusedError(
        `Request '${requestId}' is ${resolved}; only IN_FLIGHT or EXPIRED rows have a worker`,
      )
    }
    if (
      !options.overrideHeartbeat &&
      !hasWorkerDeathEvidence(row, now, this.claimContext.presumedDeadAfter)
    ) {
      throw this.#aliveError(row, now)
    }
    const next: LedgerEntry = {
      ...row,
      workerDeadAssertedBy: options.by,
      workerDeadAssertedAt: now,
      resolutionReason: options.overrideHeartbeat
        ? `${options.reason} (heartbeat overridden)`
        : options.reason,
    }
    return this.casFrom(
      row,
      next,
      { outcomes: ["IN_FLIGHT"], owner: row.owner, fence: row.fence },
      "mark worker dead",
    )
  }

  /** Transitions for operators, oldest first. `stuck` selects what needs a human or a reconciler. */
  async listTransitions(options: ListTransitionsOptions = {}): Promise<LedgerEntry[]> {
    const now = this.clock.now()
    const stuckAfter = options.inFlightStuckAfter ?? 3600
    const out: LedgerEntry[] = []
    for await (const e of this.store.list()) {
      const t = resolvedOutcome(e, now)
      if (options.tool !== undefined && e.tool !== options.tool) continue
      if (options.outcome !== undefined && t !== options.outcome) continue
      if (options.parentRequestId !== undefined && e.parentRequestId !== options.parentRequestId) continue
      if (options.stuck) {
        const stuck =
          t === "BLOCKED" ||
          t === "UNKNOWN" ||
          t === "FAILED_AFTER_EFFECT" ||
          t === "EXPIRED" ||
          (t === "IN_FLIGHT" && now - e.startedAt >= stuckAfter)
        if (!stuck) continue
      }
      out.push(e)
    }
    return out.sort((a, b) => a.startedAt - b.startedAt)
  }

  /** Waits until the transition leaves IN_FLIGHT (EXPIRED counts as done). Never writes. */
  async waitForTransition(requestId: string, options: WaitOptions = {}): Promise<LedgerEntry> {
    const interval = options.pollInterval ?? this.pollInterval
    const timeout = options.pollTimeout === undefined ? this.pollTimeout : options.pollTimeout
    const deadline = timeout === null ? Number.POSITIVE_INFINITY : this.clock.now() + timeout
    for (;;) {
      const row = await this.store.get(requestId)
      if (!row) throw new LedgerError(`Cannot wait for unknown request '${requestId}'`)
      if (resolvedOutcome(row, this.clock.now()) !== "IN_FLIGHT") return row
      if (this.clock.now() >= deadline)
        throw new LedgerPollTimeoutError(`Timed out waiting for request '${requestId}'`)
      await this.clock.sleep(interval, options.signal)
    }
  }

  /** @internal a fresh in-flight row for a call. */
  freshEntry(init: {
    tool: string
    requestId: string
    args: Record<string, JsonValue>
    meta: CallMeta
    scope: TransitionScope
    binding: ToolTransitionBinding | null
    effectId: string
    providerKey: string | null
    decision: Decision | null
    prior: LedgerEntry | null
  }): LedgerEntry {
    const now = this.clock.now()
    const carried = init.prior?.providerIdempotencyKey != null ? init.prior.providerKeyFirstAttemptAt : null
    const m = init.meta
    const d = init.decision
    // One literal (the type checker holds it to every LedgerEntry field): this runs on every call.
    return {
      requestId: init.requestId,
      tool: init.tool,
      args: [],
      kwargs: { ...init.args, ...metaToKwargs(m, init.scope) },
      status: "in-flight",
      terminalOutcome: "IN_FLIGHT",
      fence: 0,
      result: null,
      error: null,
      startedAt: now,
      finishedAt: null,
      leaseUntil: null,
      owner: this.owner,
      idempotencyKey: init.requestId,
      receiptRef: null,
      sideEffectBoundary: init.binding?.sideEffectBoundaryDefault ?? "not_crossed",
      externalOperationRef: null,
      providerIdempotencyKey: init.providerKey,
      providerKeyFirstAttemptAt: init.providerKey !== null ? (carried ?? now) : null,
      lastHeartbeatAt: null,
      workerDeadAssertedBy: null,
      workerDeadAssertedAt: null,
      operatorResolution: null,
      resolvedBy: null,
      resolutionReason: null,
      resolvedAt: null,
      releasedFromOutcome: null,
      decisionId: m.decisionId ?? null,
      stateRef: m.stateRef ?? null,
      decision: d,
      effectPhase: d ? (d.allowed ? "ATTEMPTING" : "ABORTED") : "INTENDED",
      effectProtocolRequired: init.binding !== null,
      effectId: init.effectId,
      schemaVersion: LEDGER_ENTRY_SCHEMA_VERSION,
      parentRequestId: m.parentRequestId ?? null,
      handoffId: m.handoffId ?? null,
    }
  }
}
