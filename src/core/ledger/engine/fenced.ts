// Writes under a fence: only the holder of a claim (its fence, and its owner when given) moves the row, by one
// compare-and-set from the row it holds. Public `ActionLedger` methods and the tool wrapper's
// `TransitionContext` both come through here.

import { clip } from "../../repr.ts"
import type { TransitionExpectation } from "../../storage/contract.ts"
import { notJson, unstorableReason } from "../../storage/limits.ts"
import { MAX_ERROR_TEXT, storableText } from "../../storage/text.ts"
import { type LedgerCore, seconds } from "../core.ts"
import {
  LedgerConfigError,
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  LedgerReceiptUnsignedError,
  LedgerUnknownRequestError,
  type UnstorableReason,
} from "../errors.ts"
import { toolReceiptDraft } from "../machine/receipts.ts"
import {
  boundaryRow,
  completedRow,
  decisionRow,
  externalRefRow,
  failedRow,
  receiptRefRow,
  renewedRow,
  unstorableRow,
} from "../machine/transitions.ts"
import {
  type Decision,
  deadAfter,
  hasAllowedDecision,
  type LedgerEntry,
  leaseLapsed,
  resolvedOutcome,
} from "../model/entry.ts"
import type { EffectState, SideEffectBoundary, TerminalOutcome } from "../model/enums.ts"
import type { ReceiptHook, SignedReceipt } from "../model/receipt-hook.ts"
import { appendReceipt } from "./receipts.ts"

/** Who holds a claim: every post-claim mutation must present the claim's fence. */
export interface FenceGuard {
  readonly fence: number
  readonly owner?: string | null
}

/** `fail()`'s guard, and what the holder knows of the effect. */
export interface FailGuard extends FenceGuard {
  /** The effect happened: recorded as FAILED_AFTER_EFFECT (as `boundary: "crossed"`). */
  readonly failedAfterEffect?: boolean
  /** How far the holder knows it got; the stored boundary counts when higher. */
  readonly boundary?: SideEffectBoundary
}

/** The stored row as the guard's holder sees it: the guard's fence and owner are what the write must match. */
export async function heldRow(
  core: LedgerCore,
  requestId: string,
  guard: FenceGuard | undefined,
  op: string,
): Promise<LedgerEntry> {
  if (typeof guard?.fence !== "number") {
    throw new LedgerConfigError(`${op} requires the claim fence: pass the fence the claim returned`)
  }
  const row = await core.store.get(requestId)
  if (!row)
    throw new LedgerUnknownRequestError(`Cannot ${op} unknown request '${clip(requestId)}': claim it first`)
  return { ...row, fence: guard.fence, owner: guard.owner ?? row.owner }
}

/**
 * Compare-and-set `next` over the row the writer holds; a lost race throws with the reason. When only the boundary
 * moved under the write (the same holder's boundary move landed between its read and this write, as a renewal or
 * an HTTP request racing `sideEffect()` does), the write is made again over the moved boundary, never back below it.
 */
export async function casFrom(
  core: LedgerCore,
  current: LedgerEntry,
  next: LedgerEntry,
  expect: TransitionExpectation,
  op: string,
  /** Decides the write again on the row with the moved boundary (a failure is classified by it). */
  redo?: (moved: LedgerEntry) => Promise<LedgerEntry>,
): Promise<LedgerEntry> {
  let row: LedgerEntry | null
  for (let tries = 3; ; ) {
    if (await core.store.tryTransition(next, expect)) return next
    row = await core.store.get(current.requestId)
    const b = row?.sideEffectBoundary
    // Whatever else differs (a takeover, another outcome) fails the next attempt too, and is reported below. So does
    // a boundary that did not move up from what the write holds: a new owner starts at not_crossed again, and
    // writing over it once more built the same write, without end (a late owner's failure after a takeover).
    if (!--tries || !b || !expect.sideEffectBoundary || row?.fence !== expect.fence) break
    const moved = boundaryRow(current, b)
    if (moved === current && b !== current.sideEffectBoundary) break
    if (b === expect.sideEffectBoundary) break
    if (redo) return redo(moved)
    next = boundaryRow(next, b)
    expect = { ...expect, sideEffectBoundary: b }
  }
  const now = core.clock.now()
  const hints: string[] = []
  for (const field of ["owner", "fence", "effectPhase"] as const) {
    const want = expect[field]
    if (row && want != null && row[field] !== want) hints.push(`${field} is ${row[field]}, expected ${want}`)
  }
  throw new LedgerOutcomeAlreadySetError(
    `Cannot ${op} request '${clip(current.requestId)}': stored outcome is ${row ? resolvedOutcome(row, now) : "missing"}, ` +
      `expected one of [${expect.outcomes.join(", ")}]${hints.length ? ` (${hints.join("; ")})` : ""}`,
  )
}

/**
 * A write decided on `row` as it was read: the stored row must still have one of `outcomes`, its owner, fence and
 * side-effect boundary. A late owner may move the boundary of a row others are judging; a verdict must not land
 * after that move. `silentFor`: the write acts on the holder's heartbeat silence (silentAsRead).
 */
export const asRead = (
  row: LedgerEntry,
  outcomes: readonly TerminalOutcome[] = [row.terminalOutcome],
  silentFor?: number,
): TransitionExpectation => ({
  outcomes,
  owner: row.owner,
  fence: row.fence,
  sideEffectBoundary: row.sideEffectBoundary,
  silentFor,
})

/**
 * After a write decided on `judged` (a lapsed lease, a silent holder) lost: whether the stored row is still the one
 * judged (its owner moves only with its fence). Nothing moved it, so the store refused to end a lease or a heartbeat it reads as live by a clock of its own
 * (HttpLedgerStorage's server, whose clock decides): the call is still held, to wait for, not to judge again at once.
 */
export const stillHeldAsRead = (row: LedgerEntry | null, judged: LedgerEntry): boolean =>
  row?.fence === judged.fence &&
  row.terminalOutcome === judged.terminalOutcome &&
  row.sideEffectBoundary === judged.sideEffectBoundary

/**
 * `silentFor` of a write that acts on the holder's heartbeat silence as its death, when that is what this clock read
 * (no death asserted, a lapsed lease): a store on a clock of its own checks it by that clock. An endless
 * `presumedDeadAfter` never gets here: no silence proves a death then.
 */
export const silentAsRead = (core: LedgerCore, row: LedgerEntry): number | undefined =>
  row.workerDeadAssertedAt === null && leaseLapsed(row, core.clock.now())
    ? deadAfter(row, core.policy)
    : undefined

const IN_FLIGHT: readonly TerminalOutcome[] = ["IN_FLIGHT"]

/**
 * The holder's expectation: still IN_FLIGHT under its fence (and owner), at the boundary its write was built on.
 * Built in one shape whatever it asks (spreads made a shape per caller, and the stores' checks on the hot path
 * went megamorphic: a fresh call with `sideEffect()` took 13.3 µs instead of 9).
 */
const held = (c: LedgerEntry, effectPhase?: EffectState, leaseHeldAt?: number): TransitionExpectation => ({
  outcomes: IN_FLIGHT,
  owner: c.owner,
  fence: c.fence,
  effectPhase,
  sideEffectBoundary: c.sideEffectBoundary,
  leaseHeldAt,
})

/** Effect writes under the effect-commit protocol need an allowed decision and phase ATTEMPTING. */
function effectExpect(c: LedgerEntry, op: string, leaseHeldAt?: number): TransitionExpectation {
  if (c.effectProtocolRequired && !hasAllowedDecision(c)) {
    throw new LedgerOutcomeAlreadySetError(
      `Cannot ${op} request '${clip(c.requestId)}': record an allowed decision first (effect-commit protocol)`,
    )
  }
  return held(c, c.effectProtocolRequired ? "ATTEMPTING" : undefined, leaseHeldAt)
}

/** An outcome's receipt, signed before its write; `receipt` is null when the signer failed (`unsigned` says why). */
export interface SealedOutcome {
  readonly next: LedgerEntry
  readonly receipt: SignedReceipt | null
  readonly unsigned?: unknown
}

async function seal(core: LedgerCore, next: LedgerEntry): Promise<SealedOutcome> {
  // A signer outage must not strand the row in flight: once its lease lapsed the body would run again (or a keyed
  // call block as not crossed) for an outcome that is known. It is written without a receipt, then reported.
  try {
    return { next, receipt: await (core.receipts as ReceiptHook).sign(toolReceiptDraft(next)) }
  } catch (unsigned) {
    return { next, receipt: null, unsigned }
  }
}

/** An outcome write; with receipts on, the row carries the receipt id and the receipt is appended after it. */
async function outcomeCas(
  core: LedgerCore,
  c: LedgerEntry,
  next: LedgerEntry,
  expect: TransitionExpectation,
  op: string,
  redo?: (moved: LedgerEntry) => Promise<LedgerEntry>,
  sealed?: SealedOutcome,
): Promise<LedgerEntry> {
  if (!core.receipts) return casFrom(core, c, next, expect, op, redo)
  const { receipt, unsigned } = sealed ?? (await seal(core, next))
  const written = receipt ? receiptRefRow(next, receipt.receipt_id) : next
  const row = await casFrom(core, c, written, expect, op, redo)
  // A redone write stored (and appended) its own receipt, or none.
  if (redo && row !== written) return row
  if (!receipt) throw new LedgerReceiptUnsignedError(row.requestId, unsigned)
  await appendReceipt(core.receipts, receipt, row.requestId)
  return row
}

/**
 * Signs a completion's receipt ahead of its write, while the lease is still renewed: a signer slower than what was
 * left of the lease let it lapse after the effect, and a redispatch blocked the finished call (or ran it again).
 */
export const sealCompletion = (core: LedgerCore, c: LedgerEntry, result: unknown): Promise<SealedOutcome> =>
  seal(core, completedOrUnstorable(core, c, result))

export function completeHeld(
  core: LedgerCore,
  c: LedgerEntry,
  result: unknown,
  sealed?: SealedOutcome,
): Promise<LedgerEntry> {
  const expect = effectExpect(c, "complete")
  // A sealed outcome is written over the row as it is now: a ref or a renewal written since it was sealed is kept.
  const s = sealed?.next
  const next = s
    ? { ...completedRow(c, null, s.finishedAt as number), result: s.result, error: s.error }
    : completedOrUnstorable(core, c, result)
  return outcomeCas(core, c, next, expect, "complete", undefined, sealed)
}

/**
 * Completes without the result, which the caller found too big, too deep or not JSON for the store (a remote
 * client checks before sending it). Replays raise `LedgerResultUnstorableError` naming `limit`.
 */
export function completeUnstorableHeld(
  core: LedgerCore,
  c: LedgerEntry,
  limit: UnstorableReason,
  message: string,
): Promise<LedgerEntry> {
  const expect = effectExpect(c, "complete")
  return outcomeCas(core, c, unstorableRow(c, limit, message, core.clock.now()), expect, "complete")
}

/**
 * `build()`, or (its result is too big, too deep or not JSON for the store) what `unstorable` makes of that: a
 * write the store refuses after the effect ran would strand the row, and a cycle would throw a bare RangeError.
 */
export function storable(
  core: LedgerCore,
  build: () => LedgerEntry,
  unstorable: (bad: { reason: UnstorableReason; message: string }) => LedgerEntry,
): LedgerEntry {
  const limits = core.storage.limits
  let bad: { reason: UnstorableReason; message: string } | null
  try {
    const next = build()
    bad = limits ? unstorableReason(next, limits) : null
    if (!bad) return next
  } catch (e) {
    // A cycle overflows the JSON conversion; a toJSON() may throw.
    bad = notJson(e)
  }
  return unstorable(bad)
}

/** The completion row, or a COMPLETED row that says its result could not be stored (replays raise). */
export function completedOrUnstorable(core: LedgerCore, c: LedgerEntry, result: unknown): LedgerEntry {
  const now = core.clock.now()
  return storable(
    core,
    () => completedRow(c, result, now),
    (bad) => {
      core.warn(
        `the result of '${c.tool}' request '${clip(c.requestId)}' was not stored (${bad.message}); replays raise ` +
          "LedgerResultUnstorableError. Return less from the tool.",
      )
      return unstorableRow(c, bad.reason, bad.message, now)
    },
  )
}

/**
 * An error's text as every store keeps it: a tool's error of several MB made a Durable Object refuse the write
 * (SQLite's 2 MB), one holding a NUL made Postgres refuse it, and either stranded the row IN_FLIGHT.
 */
const errorForRow = (error: string): string => storableText(error, MAX_ERROR_TEXT)

/**
 * A failure, classified by the boundary, the stored one or `floor` (what the writer knows) if higher: crossed is
 * FAILED_AFTER_EFFECT, maybe_crossed UNKNOWN, not_crossed FAILED_BEFORE_EFFECT. The original wrote
 * FAILED_BEFORE_EFFECT on any boundary, a label that says no effect happened on a row whose effect may have. A
 * boundary that moves under the write classifies it again.
 */
export function failHeld(
  core: LedgerCore,
  c: LedgerEntry,
  error: string,
  floor?: SideEffectBoundary,
): Promise<LedgerEntry> {
  const now = core.clock.now()
  error = errorForRow(error)
  // An absent floor ranks below every boundary (boundaryRow's `?? 0`), so the stored one decides.
  const at = boundaryRow(c, floor as SideEffectBoundary)
  const redo = (moved: LedgerEntry) => failHeld(core, moved, error, floor)
  const b = at.sideEffectBoundary
  if (b === "maybe_crossed")
    return casFrom(core, c, failedRow(at, "UNKNOWN", error, now), held(c), "fail", redo)
  const next = failedRow(at, b === "crossed" ? "FAILED_AFTER_EFFECT" : "FAILED_BEFORE_EFFECT", error, now)
  return outcomeCas(core, c, next, held(c), "fail", redo)
}

/** `markUnknown()` and `markBlocked()`: the holder ends its row UNKNOWN or BLOCKED. */
export function markHeld(
  core: LedgerCore,
  c: LedgerEntry,
  outcome: "UNKNOWN" | "BLOCKED",
  error: string,
): Promise<LedgerEntry> {
  const next = failedRow(c, outcome, errorForRow(error), core.clock.now())
  return casFrom(core, c, next, held(c), `mark ${outcome.toLowerCase()}`)
}

const lapsed = (c: LedgerEntry, act: string): LedgerLeaseError =>
  new LedgerLeaseError(
    `Cannot ${act} request '${clip(c.requestId)}': lease already expired — reclaim or reconcile instead`,
  )

/** A weaker value still performs the CAS, so a stale fence fails even when nothing would change. */
export async function advanceBoundaryHeld(
  core: LedgerCore,
  c: LedgerEntry,
  boundary: SideEffectBoundary,
): Promise<LedgerEntry> {
  // Leaving not_crossed starts the effect, and the lease is the permission to: once it has lapsed, a redispatch may
  // have judged the row not crossed and taken it over, so a late owner must not begin an effect. So does each later
  // sideEffect() (maybe_crossed again): a retry after an attempt that failed before its effect starts one too, and
  // the row may be released not_executed from the provider's records once the lease lapsed.
  const heldAt =
    c.sideEffectBoundary === "not_crossed" || boundary === "maybe_crossed" ? core.clock.now() : undefined
  const expect = effectExpect(c, "advance boundary", heldAt)
  const row = await casFrom(core, c, boundaryRow(c, boundary), expect, "advance boundary")
  // The store checked the lease at `heldAt`, read before the write. A lease that lapsed by the same clock while the
  // write was in flight (a slow store, a pause) must not start the effect either: the owner may be presumed dead by
  // the time it runs, and its row settled `not_executed` from the provider's records. The row stays maybe_crossed,
  // so the failure recorded is UNKNOWN. Nor does one this clock read as lapsed already at `heldAt`, which a store on
  // a clock of its own (HttpLedgerStorage's server) accepted: its answer may come back after that store's lease lapsed
  // too. A lease read as lapsed then was once exempt, for a row read back with the server's stamps; the client that
  // claimed a row hands it back with its own (docs/http-api.md), so the exemption let a guard method's boundary write
  // start the effect however long its answer took, and a redispatch run it too.
  const lease = row.leaseUntil
  if (heldAt !== undefined && lease !== null && core.clock.now() >= lease)
    throw lapsed(c, "start the effect of")
  return row
}

export function attachRefHeld(core: LedgerCore, c: LedgerEntry, ref: string): Promise<LedgerEntry> {
  const op = "attach external operation ref"
  return casFrom(core, c, externalRefRow(c, ref), effectExpect(c, op), op)
}

export async function renewHeld(core: LedgerCore, c: LedgerEntry, leaseTtl?: number): Promise<LedgerEntry> {
  // As a claim's: Infinity would be stored as an unbounded lease (JSON has none).
  const ttl = seconds("leaseTtl", leaseTtl ?? core.policy.leaseTtl)
  if (!(ttl > 0)) throw new LedgerConfigError("renewLease needs a positive lease ttl (seconds)")
  const now = core.clock.now()
  if (c.leaseUntil !== null && now >= c.leaseUntil) throw lapsed(c, "renew")
  return casFrom(core, c, renewedRow(c, ttl, now), held(c, undefined, now), "renew lease")
}

export function recordDecisionHeld(core: LedgerCore, c: LedgerEntry, d: Decision): Promise<LedgerEntry> {
  const expect = held(c, "INTENDED")
  return casFrom(core, c, decisionRow(c, d), expect, "record decision")
}
