// `ledger.tool(options, fn)`: the per-call lifecycle of a ledgered tool, and the `TransitionContext` its body gets.

import { clip } from "../../repr.ts"
import { renewEvery, throwIfAborted } from "../clock.ts"
import { checkCallSeconds, type LedgerCore } from "../core.ts"
import {
  LedgerConfigError,
  LedgerError,
  LedgerHardBlockError,
  LedgerOutcomeAlreadySetError,
  LedgerReceiptUnsignedError,
  LedgerStorageUnavailableError,
} from "../errors.ts"
import { ALLOWED_DECISION, errorText } from "../machine/transitions.ts"
import { throwIfUnstorable } from "../machine/unstorable.ts"
import { ToolTransitionBinding, type ToolTransitionBindingInit } from "../model/binding.ts"
import { cloneJson } from "../model/canonical.ts"
import { type Decision, type LedgerEntry, resolvedOutcome } from "../model/entry.ts"
import { isConsequential, type SideEffectBoundary } from "../model/enums.ts"
import type { CallMeta } from "../model/identity.ts"
import type { DecisionIntent } from "../model/reconcile.ts"
import { claimTransition } from "./claim.ts"
import {
  advanceBoundaryHeld,
  attachRefHeld,
  completeHeld,
  failHeld,
  renewHeld,
  type SealedOutcome,
  sealCompletion,
} from "./fenced.ts"
import { checkSameRowIdentity } from "./identity-checks.ts"
import { waitForTransition } from "./operators.ts"
import { prepareCall } from "./request.ts"

export interface LedgeredToolOptions {
  /** Tool name: part of the transition key and of every row. */
  readonly name: string
  /** Side-effect class and policy. Without one the tool is "unclassified" (see `unclassifiedPolicy`). */
  readonly binding?: ToolTransitionBinding | ToolTransitionBindingInit
  readonly leaseTtl?: number
  readonly pollInterval?: number
  readonly pollTimeout?: number | null
}

type Kwargs = Readonly<Record<string, unknown>>

export type ToolBody<A, R> = (args: A, tx: TransitionContext) => Promise<R> | R

/** The wrapped function, with the facade it was made by as `ledger`. */
export interface LedgeredCall<A, R, L> {
  (args: A, meta?: CallMeta): Promise<R>
  readonly toolName: string
  readonly binding: ToolTransitionBinding | null
  readonly ledger: L
}

/** Evaluates the ledger's predicates. Runs before any claim, so a denial writes nothing. */
async function decide(core: LedgerCore, intent: DecisionIntent): Promise<Decision> {
  const verdicts: Array<{ name: string; allowed: boolean; reason: string | null }> = []
  const deniedReasons: string[] = []
  for (const p of core.policy.predicates) {
    const v = await p.check(intent)
    const { allowed, reason = null } = typeof v === "boolean" ? { allowed: v } : v
    const { name } = p
    verdicts.push({ name, allowed, reason })
    if (!allowed) deniedReasons.push(reason ?? `${name}: policy predicate refused`)
  }
  return { allowed: deniedReasons.length === 0, verdicts, deniedReasons }
}

export function createLedgeredTool<A extends object, R, L>(
  core: LedgerCore,
  options: LedgeredToolOptions,
  fn: ToolBody<A, R>,
  ledger: L,
): LedgeredCall<A, R, L> {
  // Checked once, so read once into a copy: the caller's object may change after (a NaN lease would never lapse).
  // Field by field, not a spread, which drops inherited fields and getters (a binding on a defaults object).
  const { name: tool, binding: given, leaseTtl, pollInterval, pollTimeout } = options ?? {}
  if (!tool) throw new LedgerConfigError("ledger.tool() needs a name: pass { name: 'my_tool', ... }")
  const timing = { leaseTtl, pollInterval, pollTimeout }
  checkCallSeconds(timing)
  const binding = given ? ToolTransitionBinding.from(given) : null
  if (
    binding &&
    isConsequential(binding.sideEffectClass) &&
    (core.storage as { kind?: string }).kind === "memory"
  ) {
    core.warnOnce(
      `memory:${tool}`,
      `Tool '${tool}' (${binding.sideEffectClass}) is ledgered in memory (lost on restart, unseen elsewhere): use a durable store in production.`,
    )
  }

  // `A` is as the tool declares it (an interface has no index signature); the ledger keys the plain object it is.
  // `null` from JavaScript is no metadata, as `undefined` is (it threw a bare TypeError).
  const call = async (args: A, given?: CallMeta | null): Promise<R> => {
    const meta = given ?? {}
    throwIfAborted(meta.signal)
    let decision: Decision | null = null
    const request = prepareCall(core, tool, binding, args as Kwargs, meta, () => decision, timing)
    const verdict =
      core.policy.predicates.length === 0
        ? ALLOWED_DECISION
        : await decide(core, {
            tool,
            requestId: request.requestId,
            args: args as Kwargs,
            sideEffectClass: binding?.sideEffectClass ?? null,
          })
    if (!verdict.allowed) {
      // The original decides after its claim, so a denial still answers the call itself: its completed row, or once
      // it ends, its in-flight one. A row of another call here (another tool, scope or arguments) is refused as the
      // claim refuses it, never answered.
      let row = await core.store.get(request.requestId)
      while (row) {
        checkSameRowIdentity(core, request, row)
        if (row.terminalOutcome === "COMPLETED") {
          throwIfUnstorable(row)
          return cloneJson(row.result) as R
        }
        if (resolvedOutcome(row, core.clock.now()) !== "IN_FLIGHT") break
        row = await waitForTransition(core, request.requestId, request)
      }
      throw new LedgerHardBlockError(
        `decision denied for '${clip(request.requestId)}': ${verdict.deniedReasons.join("; ") || "policy predicate refused"}`,
      )
    }
    // The allowed decision rides on the claim write itself: one write instead of claim + decision CAS.
    if (binding) decision = verdict
    const claimed = await claimTransition(core, request)
    if (!claimed.owned) {
      throwIfUnstorable(claimed.entry)
      return cloneJson(claimed.entry.result) as R
    }

    const tx = new OwnedTransition(core, claimed.entry, meta.signal)
    tx.startAutoRenew(request.leaseTtl)
    let result: R
    try {
      // A caller that gave up during the claim (a framework's timeout) is gone: a body started now would be an
      // effect nobody waits for, beside the retry the caller was free to make. It fails before its effect.
      throwIfAborted(meta.signal)
      result = await fn(args, tx)
    } catch (err) {
      await tx.stop()
      await tx.recordFailure(err)
      throw err
    }
    // The receipt is signed while the lease is still renewed, then renewal stops and the outcome is written.
    const sealed = core.receipts ? await tx.seal(result) : undefined
    const writing = tx.stop()
    if (writing) await writing
    try {
      await tx.complete(result, sealed)
    } catch (e) {
      if (!(e instanceof LedgerOutcomeAlreadySetError)) throw e
      core.warn(`tool result discarded for '${tool}' request '${clip(request.requestId)}': ${e.message}`)
    }
    return result
  }
  return Object.assign(call, { toolName: tool, binding, ledger })
}

export const ignore = (): void => {}

/**
 * Microtask turns before a body's renewal timer is made: enough for an async body that returns at once, or after
 * awaiting an already settled promise, to settle and stop its transition first.
 */
const RENEW_TIMER_HOPS = 4
// `then` on a settled promise: a plain microtask (Node's queueMicrotask adds an async-hooks scope to each).
const settled = Promise.resolve()

// Made on first use: workerd refuses to create an AbortController while a module loads.
let never: AbortSignal | null = null
function neverAborts(): AbortSignal {
  never ??= new AbortController().signal
  return never
}

/**
 * What a ledgered tool body gets: the claim it holds and the side-effect boundary helpers. Writes are serialized
 * and fenced; a stale worker (its claim taken over) cannot move the row.
 */
export interface TransitionContext {
  readonly requestId: string
  readonly fence: number
  /** The row as this worker last wrote it. */
  readonly entry: LedgerEntry
  readonly signal: AbortSignal
  /**
   * Marks the point of no return: `maybe_crossed` is written durably before `fn` runs, so a crash inside it leaves
   * the transition UNKNOWN and a redispatch hard-blocks instead of paying twice.
   */
  sideEffect<T>(fn: () => Promise<T> | T): Promise<T>
  markMaybeCrossed(): Promise<void>
  markCrossed(): Promise<void>
  /** Stores the provider's handle (payment intent id, message id, the idempotency key sent) for reconciliation. */
  recordExternalOperation(ref: string): Promise<void>
  renewLease(leaseTtl?: number): Promise<void>
}

/** One owned transition: the body's `TransitionContext` plus the lifecycle the wrapper drives around the body. */
class OwnedTransition implements TransitionContext {
  readonly #core: LedgerCore
  #current: LedgerEntry
  /** Writes in flight, in order; null until the first. */
  #chain: Promise<unknown> | null = null
  /** Boundary known to this worker; `crossed` after a clean `sideEffect()` is folded into the completion write. */
  #boundary: SideEffectBoundary
  #stopRenew: (() => void) | null = null
  /** Set by `stop()`: a renewal timer not yet made is never made. */
  #stopped = false
  readonly signal: AbortSignal

  constructor(core: LedgerCore, entry: LedgerEntry, signal: AbortSignal | undefined) {
    this.#core = core
    this.#current = entry
    this.#boundary = entry.sideEffectBoundary
    this.signal = signal ?? neverAborts()
  }

  get requestId(): string {
    return this.#current.requestId
  }
  get fence(): number {
    return this.#current.fence
  }
  /** The row as this worker last wrote it. */
  get entry(): LedgerEntry {
    return this.#current
  }

  #write(op: (current: LedgerEntry) => Promise<LedgerEntry>): Promise<void> {
    const run = this.#apply(op, this.#chain)
    this.#chain = run.catch(ignore)
    return run
  }

  // The earlier write awaited here, not chained by then(): an op that throws before it returns a promise (a ref
  // String() refuses, a warning hook that throws) rejects this at once, and workerd reports a promise already
  // rejected when a then() callback hands it back as uncaught, handled or not.
  async #apply(
    op: (current: LedgerEntry) => Promise<LedgerEntry>,
    prev: Promise<unknown> | null,
  ): Promise<void> {
    if (prev) await prev
    this.#current = await op(this.#current)
  }

  /**
   * Marks the point of no return: `maybe_crossed` is written durably before `fn` runs, so a crash inside it leaves
   * the transition UNKNOWN and a redispatch hard-blocks instead of paying twice. The write is fenced and happens
   * on every call, even when the boundary is already past: it is the check that this worker still holds the
   * claim, so a late owner whose row was taken over, blocked or released never reaches `fn`.
   */
  async sideEffect<T>(fn: () => Promise<T> | T): Promise<T> {
    await this.#advance("maybe_crossed")
    if (this.#boundary === "not_crossed") this.#boundary = "maybe_crossed"
    const out = await fn()
    this.#boundary = "crossed"
    return out
  }

  async markMaybeCrossed(): Promise<void> {
    if (this.#boundary === "maybe_crossed" || this.#boundary === "crossed") return
    await this.#advance("maybe_crossed")
    this.#boundary = "maybe_crossed"
  }

  async markCrossed(): Promise<void> {
    await this.#advance("crossed")
    this.#boundary = "crossed"
  }

  #advance(boundary: SideEffectBoundary): Promise<void> {
    return this.#write((c) => advanceBoundaryHeld(this.#core, c, boundary))
  }

  /** Stores the provider's handle (payment intent id, message id, the idempotency key sent) for reconciliation. */
  recordExternalOperation(ref: string): Promise<void> {
    return this.#write((c) => attachRefHeld(this.#core, c, ref))
  }

  renewLease(leaseTtl?: number): Promise<void> {
    return this.#write((c) => renewHeld(this.#core, c, leaseTtl))
  }

  /**
   * Renews the lease every `leaseRenewInterval`, or every third of the tool's own shorter lease, while the body runs.
   * The timer is made a few microtasks later, still before any timer or I/O callback can run, so a body that settles
   * at once (a cached or in-memory answer) costs none; the first renewal still falls one interval after the claim.
   */
  startAutoRenew(leaseTtl: number): void {
    // A tool's lease shorter than the ledger's renewal interval lapsed mid-body: another worker could take the call
    // over and run it beside this one.
    const every = Math.min(this.#core.policy.leaseRenewInterval, Math.max(leaseTtl / 3, 0.01))
    if (!(leaseTtl > 0) || !(every > 0)) return
    const claimedAt = Date.now()
    let hops = RENEW_TIMER_HOPS
    const arm = (): void => {
      if (this.#stopped) return
      if (--hops > 0) {
        settled.then(arm)
        return
      }
      // A ledger refusal means the claim is gone; renewing further is pointless. Storage hiccups retry next tick.
      this.#stopRenew = renewEvery(
        every,
        () => this.renewLease(leaseTtl),
        (e) => !(e instanceof LedgerError) || e instanceof LedgerStorageUnavailableError,
        every - (Date.now() - claimedAt) / 1000,
      )
    }
    settled.then(arm)
  }

  /** Stops renewal; the writes in flight, if any, to wait for. */
  stop(): Promise<unknown> | null {
    this.#stopped = true
    // `#stopped` keeps a timer not made yet from being made; stopping a made one twice is harmless.
    this.#stopRenew?.()
    return this.#chain
  }

  /** The completion's receipt, over the row as the writes in flight leave it. */
  async seal(result: unknown): Promise<SealedOutcome> {
    await this.#chain
    return await sealCompletion(this.#core, this.#current, result)
  }

  complete(result: unknown, sealed?: SealedOutcome): Promise<void> {
    return this.#write((c) => completeHeld(this.#core, c, result, sealed))
  }

  /** Failure classification from the boundary; recording problems never mask the tool's error. */
  async recordFailure(err: unknown): Promise<void> {
    const text = errorText(err)
    try {
      // After sideEffect() returned, this worker knows the effect happened; the row still says maybe_crossed.
      await this.#write((c) => failHeld(this.#core, c, text, this.#boundary))
    } catch (e) {
      const at = `the failure of '${this.#current.tool}' request '${clip(this.requestId)}'`
      this.#core.warn(
        // outcomeCas wrote the row before it threw this.
        e instanceof LedgerReceiptUnsignedError
          ? `${at} is recorded but its receipt was not signed: ${errorText(e.cause)}. Restore the signer`
          : `could not record ${at}: ${errorText(e)}`,
      )
    }
  }
}
