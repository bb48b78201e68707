// The public facade: options → core (core.ts); each method hands the core to the engine.
import type { LedgerStorage } from "../storage/contract.ts"
import type { Clock } from "./clock.ts"
import { type ActionLedgerOptions, checkCallSeconds, createLedgerCore, type LedgerCore } from "./core.ts"
import { claimTransition } from "./engine/claim.ts"
import {
  advanceBoundaryHeld,
  attachRefHeld,
  completeHeld,
  completeUnstorableHeld,
  type FailGuard,
  type FenceGuard,
  failHeld,
  heldRow,
  markHeld,
  recordDecisionHeld,
  renewHeld,
} from "./engine/fenced.ts"
import {
  type ListTransitionsOptions,
  listTransitions,
  type MarkWorkerDeadOptions,
  markWorkerDeadFor,
  type ReleaseOptions,
  release,
  type WaitOptions,
  waitForTransition,
} from "./engine/operators.ts"
import { type ClaimOutcome, prepareCall } from "./engine/request.ts"
import { createLedgeredTool, ignore, type LedgeredToolOptions, type ToolBody } from "./engine/tool.ts"
import { LedgerConfigError, type UnstorableReason } from "./errors.ts"
import { ToolTransitionBinding, type ToolTransitionBindingInit } from "./model/binding.ts"
import type { Decision, LedgerEntry } from "./model/entry.ts"
import type { RequestIdentityPolicy, SideEffectBoundary, UnclassifiedPolicy } from "./model/enums.ts"
import type { CallMeta } from "./model/identity.ts"
import type { ReceiptHook } from "./model/receipt-hook.ts"
import type { DecisionPredicate, Reconciler } from "./model/reconcile.ts"
import type { ToolArgs } from "./model/tool-arguments.ts"

export type { ActionLedgerOptions } from "./core.ts"
export type { FailGuard, FenceGuard } from "./engine/fenced.ts"

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

/** The guard of `renewLease`: the holder's fence, and optionally the seconds of the new lease (default the ledger's). */
export interface RenewLeaseGuard extends FenceGuard {
  readonly leaseTtl?: number
}

/** A function wrapped by `ledger.tool()`: every call goes through the ledger. */
export interface LedgeredTool<A, R> {
  (args: A, meta?: CallMeta): Promise<R>
  readonly toolName: string
  readonly binding: ToolTransitionBinding | null
  readonly ledger: ActionLedger
}

/**
 * The action ledger: one durable row per tool transition, claimed before the tool runs, fenced on every write.
 * A redispatched call returns the stored result, waits for the live one, or refuses when the outcome is ambiguous.
 */
export class ActionLedger {
  readonly #core: LedgerCore
  // Each row's last queued holder write (see #held); removed once it settles, so the map holds only rows in use.
  readonly #writing = new Map<string, Promise<void>>()

  constructor(options: ActionLedgerOptions = {}) {
    this.#core = createLedgerCore(options)
  }

  get storage(): LedgerStorage {
    return this.#core.storage
  }
  get leaseTtl(): number {
    return this.#core.policy.leaseTtl
  }
  get leaseRenewInterval(): number {
    return this.#core.policy.leaseRenewInterval
  }
  get pollInterval(): number {
    return this.#core.policy.pollInterval
  }
  get pollTimeout(): number | null {
    return this.#core.policy.pollTimeout
  }
  get owner(): string {
    return this.#core.owner
  }
  get clock(): Clock {
    return this.#core.clock
  }
  get requestIdentityPolicy(): RequestIdentityPolicy {
    return this.#core.policy.requestIdentityPolicy
  }
  get unclassifiedPolicy(): UnclassifiedPolicy {
    return this.#core.policy.unclassifiedPolicy
  }
  get predicates(): readonly DecisionPredicate[] {
    return this.#core.policy.predicates
  }
  get reconciler(): Reconciler | null {
    return this.#core.policy.reconciler
  }
  get receipts(): ReceiptHook | null {
    return this.#core.receipts
  }

  /** Wraps `fn` so every call goes through the ledger. See `LedgeredToolOptions`. */
  tool<A extends object, R>(options: LedgeredToolOptions, fn: ToolBody<ToolArgs<A>, R>): LedgeredTool<A, R> {
    return createLedgeredTool(this.#core, options, fn as ToolBody<A, R>, this)
  }

  get(requestId: string): Promise<LedgerEntry | null> {
    return this.#core.store.get(requestId)
  }

  /**
   * Claims a transition by hand. `owned: true` means the caller must run the effect and then `complete` or
   * `fail` with the returned fence; `owned: false` carries the stored COMPLETED row. Rows claimed here start in
   * phase INTENDED: call `recordDecision` before the effect (the effect-commit protocol).
   */
  async claim(request: ManualClaimRequest): Promise<ClaimOutcome> {
    // Every row needs its tool: a row without one makes every other reader of a file store find the file corrupt.
    if (typeof request?.tool !== "string" || !request.tool)
      throw new LedgerConfigError("claim() needs a tool name: pass { tool: 'my_tool', ... }")
    checkCallSeconds(request)
    const binding = request.binding ? ToolTransitionBinding.from(request.binding) : null
    const meta =
      request.requestId === undefined
        ? (request.meta ?? {})
        : { ...request.meta, requestId: request.requestId }
    const decision = request.decision ?? null
    const call = prepareCall(this.#core, request.tool, binding, request.args ?? {}, meta, () => decision, {
      leaseTtl: request.leaseTtl,
    })
    return await claimTransition(this.#core, call)
  }

  // ---- fenced mutations (engine/fenced.ts): the guard's holder moves the row, by one compare-and-set ----------

  complete(requestId: string, result: unknown, guard: FenceGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "complete", completeHeld, result)
  }

  /**
   * Completes without the result, which the caller found too big, too deep or not JSON for the backend's limits
   * (a remote client checks before sending it). Replays raise `LedgerResultUnstorableError` naming `limit`.
   */
  completeUnstorable(
    requestId: string,
    limit: UnstorableReason,
    message: string,
    guard: FenceGuard,
  ): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "complete", completeUnstorableHeld, limit, message)
  }

  /** Records a failure by the boundary: not_crossed FAILED_BEFORE_EFFECT, maybe_crossed UNKNOWN, crossed FAILED_AFTER_EFFECT. */
  fail(requestId: string, error: string, guard: FailGuard): Promise<LedgerEntry> {
    // The guard is read when the write runs, after heldRow checked it.
    return this.#held(requestId, guard, "fail", (core, c) =>
      failHeld(core, c, error, guard.failedAfterEffect ? "crossed" : guard.boundary),
    )
  }

  markUnknown(requestId: string, error: string, guard: FenceGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "mark unknown", markHeld, "UNKNOWN", error)
  }

  markBlocked(requestId: string, error: string, guard: FenceGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "mark blocked", markHeld, "BLOCKED", error)
  }

  advanceBoundary(requestId: string, boundary: SideEffectBoundary, guard: FenceGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "advance boundary", advanceBoundaryHeld, boundary)
  }

  attachExternalOperationRef(requestId: string, ref: string, guard: FenceGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "attach external operation ref", attachRefHeld, ref)
  }

  renewLease(requestId: string, guard: RenewLeaseGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "renew lease", (core, c) => renewHeld(core, c, guard.leaseTtl))
  }

  /** Records the decision before the effect (moves phase INTENDED → ATTEMPTING, or ABORTED if denied). */
  recordDecision(requestId: string, decision: Decision, guard: FenceGuard): Promise<LedgerEntry> {
    return this.#held(requestId, guard, "record decision", recordDecisionHeld, decision)
  }

  /**
   * A holder's write, built on the row as read now and made after this ledger's earlier writes to the same row.
   * Each write sets the whole row: two built on one read (a renewal timer beside a provider ref, an HTTP client's
   * overlapping requests to the edge API) kept only the later one's fields.
   */
  #held<T extends unknown[]>(
    requestId: string,
    guard: FenceGuard,
    op: string,
    write: (core: LedgerCore, row: LedgerEntry, ...args: T) => Promise<LedgerEntry>,
    ...args: T
  ): Promise<LedgerEntry> {
    // Awaited, not returned: a write that rejects at once (a refused ttl) would get its handler a microtask later,
    // which workerd reports as an unhandled rejection.
    const run = (this.#writing.get(requestId) ?? Promise.resolve()).then(
      async () => await write(this.#core, await heldRow(this.#core, requestId, guard, op), ...args),
    )
    const done = run.then(ignore, ignore)
    this.#writing.set(requestId, done)
    done.then(() => this.#writing.get(requestId) === done && this.#writing.delete(requestId))
    return run
  }

  // ---- operators (engine/operators.ts) ----------------------------------------------------------------------

  /**
   * An operator's verdict on an ambiguous transition. `completed` stores the result; `not_executed` lets the next
   * redispatch run the tool exactly once more. One-shot per transition.
   */
  release(requestId: string, options: ReleaseOptions): Promise<LedgerEntry> {
    return release(this.#core, requestId, options)
  }

  /** An operator asserts the worker behind a transition is dead, so a death-gated reclaim may proceed. */
  markWorkerDeadFor(requestId: string, options: MarkWorkerDeadOptions): Promise<LedgerEntry> {
    return markWorkerDeadFor(this.#core, requestId, options)
  }

  /** Transitions for operators, oldest first. `stuck` selects what needs a human or a reconciler. */
  listTransitions(options?: ListTransitionsOptions): Promise<LedgerEntry[]> {
    return listTransitions(this.#core, options)
  }

  /** Waits until the transition leaves IN_FLIGHT (EXPIRED counts as done). Never writes. */
  waitForTransition(requestId: string, options?: WaitOptions): Promise<LedgerEntry> {
    return waitForTransition(this.#core, requestId, options)
  }
}
