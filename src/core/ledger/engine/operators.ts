// Operator actions: verdicts on ambiguous transitions, worker-death assertions, listings. ActionLedger exposes
// each as a method.
import { blank } from "../../blank.ts"
import { clip } from "../../repr.ts"
import { checkCallSeconds, type LedgerCore, seconds } from "../core.ts"
import {
  LedgerAlreadyResolvedError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  LedgerUnknownRequestError,
  LedgerWorkerAliveError,
} from "../errors.ts"
import { releaseNeedsDeathSignal } from "../machine/gates.ts"
import { ageString, remainingString } from "../machine/messages.ts"
import { releaseReceiptDraft } from "../machine/receipts.ts"
import {
  errorText,
  LAPSED_OUTCOMES,
  lapsedBlockedRow,
  RELEASABLE_OUTCOMES,
  releasedRow,
  workerDeadRow,
} from "../machine/transitions.ts"
import {
  deadAfter,
  hasWorkerDeathEvidence,
  type LedgerEntry,
  leaseLapsed,
  resolvedOutcome,
} from "../model/entry.ts"
import { parseTerminalOutcome, type TerminalOutcome } from "../model/enums.ts"
import { asRead, casFrom, silentAsRead, stillHeldAsRead, storable } from "./fenced.ts"
import { appendReceipt, sealRow } from "./receipts.ts"

export interface ReleaseOptions {
  readonly verified: "completed" | "not_executed"
  /** For `completed`: the result later calls receive. */
  readonly result?: unknown
  readonly by: string
  readonly reason: string
  /**
   * `not_executed` on a lapsed lease without the owner's death signal: say why the owner can no longer act
   * (e.g. "host decommissioned, disk wiped"). Stored in the resolution reason. Without it, or heartbeat silence past
   * `presumedDeadAfter`, or `markWorkerDeadFor()`, such a release is refused with `LedgerWorkerAliveError`.
   */
  readonly overrideDeathSignal?: string
  /**
   * The fence of the row as the operator saw it (`transitions show`). If another attempt claimed the transition
   * since, the verdict is about an attempt that is no longer the current one, and the release is refused.
   */
  readonly expectedFence?: number
  /**
   * Release an IN_FLIGHT row on an unbounded lease (`leaseTtl <= 0`), which never lapses. Only once its worker is
   * asserted dead (`markWorkerDeadFor()`); a bounded live lease is refused regardless.
   */
  readonly force?: boolean
}

export interface MarkWorkerDeadOptions {
  readonly by: string
  readonly reason: string
  readonly overrideHeartbeat?: boolean
  /** As in `ReleaseOptions`: refused if the transition was claimed again since the operator looked at it. */
  readonly expectedFence?: number
}

/** The verdict was formed on another attempt than the row's current one (the fence moved since). */
function checkFence(row: LedgerEntry, expected: number | undefined, cannot: string): void {
  if (expected === undefined || expected === row.fence) return
  if (!Number.isSafeInteger(expected) || expected < 0)
    throw new LedgerReleaseRefusedError(`expectedFence must be a whole number >= 0, got ${String(expected)}`)
  throw new LedgerReleaseRefusedError(
    `${cannot}it is at fence ${row.fence}, not ${expected} (claimed again since you looked). Look again.`,
  )
}

export interface ListTransitionsOptions {
  /** What `isStuck` selects, with IN_FLIGHT rows older than `inFlightStuckAfter` seconds (default 3600). */
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

/**
 * An operator's verdict on an ambiguous transition. `completed` stores the result; `not_executed` lets the next
 * redispatch run the tool exactly once more. One-shot per transition.
 */
export async function release(
  core: LedgerCore,
  requestId: string,
  options: ReleaseOptions,
): Promise<LedgerEntry> {
  const { verified, by, reason, overrideDeathSignal: override } = options ?? {}
  if (verified !== "completed" && verified !== "not_executed") {
    throw new LedgerReleaseRefusedError(
      `verified must be 'completed' or 'not_executed', got '${String(verified)}'`,
    )
  }
  if (override !== undefined && blank(override)) {
    throw new LedgerReleaseRefusedError("overrideDeathSignal must say why the owner can no longer act")
  }
  const cannot = `Cannot release request '${clip(requestId)}': `
  // The values read above, which the row will hold: checked, not read again (a getter could answer otherwise).
  const row = await operatorRow(core, requestId, { by, reason }, cannot)
  // Before the fence: a release moves it, so a second one would otherwise read as "claimed again".
  if (row.operatorResolution) {
    throw new LedgerAlreadyResolvedError(
      `${cannot}already released as ${row.operatorResolution} by ${row.resolvedBy}`,
    )
  }
  checkFence(row, options.expectedFence, cannot)
  const now = core.clock.now()
  const resolved = resolvedOutcome(row, now)
  if (resolved === "COMPLETED") throw new LedgerReleaseRefusedError(`${cannot}COMPLETED, nothing to release`)
  // An unbounded lease never lapses: a killed worker's row is settled only by force on an asserted death.
  if (resolved === "IN_FLIGHT" && !(options.force && row.leaseUntil === null && row.workerDeadAssertedAt)) {
    throw new LedgerReleaseRefusedError(
      `${cannot}IN_FLIGHT with a live lease; ${row.leaseUntil === null ? "mark its worker dead, then release with force" : "release it once EXPIRED"}`,
    )
  }
  // A release the death signal gates, without evidence of the death: only the operator's word for it lets it pass.
  const needsDeath = releaseNeedsDeathSignal(row, verified, now, core.policy.reclaimRequiresDeathSignal)
  const unproven = needsDeath && !hasWorkerDeathEvidence(row, now, deadAfter(row, core.policy))
  if (unproven && !override) {
    throw aliveError(
      core,
      row,
      now,
      `${cannot}${resolved === "EXPIRED" ? resolved : `${resolved} (its lease lapsed)`}`,
      "Wait for heartbeat silence, mark the worker dead, or give a death-signal override saying why it cannot act.",
    )
  }
  if (verified === "completed" && row.effectProtocolRequired && !row.decision?.allowed) {
    throw new LedgerReleaseRefusedError(
      `${cannot}no allowed decision, so it cannot have completed; release it as not_executed`,
    )
  }
  const why = unproven && override ? `${reason} (death signal overridden: ${override.trim()})` : reason
  // A result the store cannot hold is refused before anything is written.
  const released = storable(
    core,
    // A not_executed IN_FLIGHT row (forced) becomes BLOCKED, as an EXPIRED one does, for the redispatch to settle.
    () =>
      releasedRow(
        verified === "completed" || resolved !== "IN_FLIGHT" ? row : lapsedBlockedRow(row, now),
        verified,
        options.result ?? null,
        by,
        why,
        resolved,
        now,
      ),
    (bad) => {
      throw new LedgerReleaseRefusedError(`${cannot}${bad.message}; pass a smaller result or reason`)
    },
  )
  // Signed before the write: a signer outage refuses the release and changes nothing.
  const { row: next, receipt } = await sealRow(core, released, (n) =>
    releaseReceiptDraft(row, n, verified, by, why, resolved, now),
  ).catch((e: unknown) => {
    throw new LedgerReleaseRefusedError(
      `${cannot}its receipt was not signed: ${errorText(e)}. Restore the signer; release again.`,
      { cause: e },
    )
  })
  // The verdict is on the row as read: a late owner's boundary move, or another release (it moved the fence), since
  // then supersedes it.
  // Released on the heartbeat's silence by this clock, not the operator's word: a store on a clock of its own checks
  // that silence too.
  const silentFor = needsDeath && !override ? silentAsRead(core, row) : undefined
  const ok = await core.store.tryTransition(next, asRead(row, RELEASABLE_OUTCOMES, silentFor))
  // Unmoved: the store judged the lease or heartbeat live by a clock of its own (HttpLedgerStorage's server).
  if (!ok && stillHeldAsRead(await core.store.get(requestId), row))
    throw new LedgerReleaseRefusedError(`${cannot}live by the store's clock`)
  if (!ok) throw new LedgerAlreadyResolvedError(`${cannot}transition superseded`)
  await appendReceipt(core.receipts, receipt, requestId)
  return next
}

/** What every operator action checks first: who decided it and why, and that the row exists. */
async function operatorRow(
  core: LedgerCore,
  requestId: string,
  options: { readonly by?: unknown; readonly reason?: unknown } | undefined,
  cannot: string,
): Promise<LedgerEntry> {
  if (blank(options?.by) || blank(options?.reason))
    throw new LedgerReleaseRefusedError(`${cannot}pass 'by' (who decided) and 'reason'`)
  const row = await core.store.get(requestId)
  if (!row) throw new LedgerReleaseRefusedError(`${cannot}no such request`)
  return row
}

/**
 * The owner may still perform the effect: no heartbeat silence past `presumedDeadAfter`, no assertion. `next` names
 * actions in words every surface maps (in-process, CLI, HTTP); the CLI and HTTP layers add their own spelling.
 */
function aliveError(
  core: LedgerCore,
  row: LedgerEntry,
  now: number,
  state: string,
  next: string,
): LedgerWorkerAliveError {
  const last = row.lastHeartbeatAt ?? row.startedAt
  const grace = deadAfter(row, core.policy) - (now - last)
  return new LedgerWorkerAliveError(
    `${state} but worker '${row.owner}' appears alive (last heartbeat ` +
      `${ageString(now - last)}) — grace window elapses ${grace < Infinity ? `in ${remainingString(grace)}` : "never"}. ${next}`,
  )
}

/** An operator asserts the worker behind a transition is dead, so a death-gated reclaim may proceed. */
export async function markWorkerDeadFor(
  core: LedgerCore,
  requestId: string,
  options: MarkWorkerDeadOptions,
): Promise<LedgerEntry> {
  const cannot = `Cannot mark worker dead for request '${clip(requestId)}': `
  const row = await operatorRow(core, requestId, options, cannot)
  checkFence(row, options.expectedFence, cannot)
  const now = core.clock.now()
  const resolved = resolvedOutcome(row, now)
  if (resolved !== "IN_FLIGHT" && !leaseLapsed(row, now)) {
    throw new LedgerReleaseRefusedError(
      `${cannot}${resolved}: only IN_FLIGHT rows and lapsed leases have a worker`,
    )
  }
  if (!options.overrideHeartbeat && !hasWorkerDeathEvidence(row, now, deadAfter(row, core.policy))) {
    // An unbounded lease's silence never counts as death (hasWorkerDeathEvidence): waiting would not help.
    if (row.leaseUntil === null && row.terminalOutcome === "IN_FLIGHT")
      throw new LedgerWorkerAliveError(
        `${cannot}its lease is unbounded, so no silence shows death. Only a heartbeat override marks it dead.`,
      )
    throw aliveError(
      core,
      row,
      now,
      `${cannot}${resolved}`,
      "Wait, or give a heartbeat override if it is known dead.",
    )
  }
  const reason = options.overrideHeartbeat ? `${options.reason} (heartbeat overridden)` : options.reason
  const next = workerDeadRow(row, options.by, reason, now)
  // Marked on the heartbeat's silence by this clock: a store on a clock of its own checks that silence too, or an
  // operator's clock ahead plants a death that licenses a re-run beside the live holder once its lease lapses.
  const silentFor =
    options.overrideHeartbeat || row.workerDeadAssertedAt !== null ? undefined : deadAfter(row, core.policy)
  try {
    return await casFrom(
      core,
      row,
      next,
      // Made again over a boundary move that lands first (casFrom), never back below it.
      // A legacy row stores EXPIRED itself (LAPSED_OUTCOMES).
      asRead(row, row.terminalOutcome === "BLOCKED" ? ["BLOCKED"] : LAPSED_OUTCOMES, silentFor),
      "mark worker dead",
    )
  } catch (e) {
    // Unmoved: the store heard from the worker within that silence by its clock (HttpLedgerStorage's server).
    if (
      e instanceof LedgerOutcomeAlreadySetError &&
      silentFor !== undefined &&
      stillHeldAsRead(await core.store.get(requestId), row)
    )
      throw new LedgerWorkerAliveError(
        `${cannot}its worker appears alive by the store's clock (a heartbeat within ${silentFor} s). Wait, or give a heartbeat override if it is known dead.`,
      )
    throw e
  }
}

/**
 * What waits for a human or a reconciler: BLOCKED, UNKNOWN, FAILED_AFTER_EFFECT, EXPIRED, IN_FLIGHT older than
 * `stuckAfter`, and (unlike the original's list) a failure "before the effect" recorded on a row whose effect may have
 * started: the gate hard-blocks it just as it blocks UNKNOWN, so an operator has to see it to release it.
 */
export function isStuck(e: LedgerEntry, now: number, stuckAfter = 3600): boolean {
  const t = resolvedOutcome(e, now)
  return t === "FAILED_BEFORE_EFFECT"
    ? e.sideEffectBoundary !== "not_crossed"
    : t === "IN_FLIGHT"
      ? now - e.startedAt >= stuckAfter
      : t !== "COMPLETED"
}

/** Transitions for operators, oldest first. `stuck` selects what needs a human or a reconciler. */
export async function listTransitions(
  core: LedgerCore,
  options: ListTransitionsOptions = {},
): Promise<LedgerEntry[]> {
  // A filter no row can match (a lower-case outcome, NaN seconds) would list nothing while a payment is stuck.
  const { outcome, inFlightStuckAfter } = options
  if (outcome !== undefined) parseTerminalOutcome(outcome)
  if (inFlightStuckAfter !== undefined) seconds("inFlightStuckAfter", inFlightStuckAfter, 0)
  const now = core.clock.now()
  const out: LedgerEntry[] = []
  for await (const e of core.store.list()) {
    if (options.tool !== undefined && e.tool !== options.tool) continue
    if (outcome !== undefined && resolvedOutcome(e, now) !== outcome) continue
    if (options.parentRequestId !== undefined && e.parentRequestId !== options.parentRequestId) continue
    if (options.stuck && !isStuck(e, now, inFlightStuckAfter)) continue
    out.push(e)
  }
  return out.sort((a, b) => a.startedAt - b.startedAt)
}

/** Waits until the transition leaves IN_FLIGHT (EXPIRED counts as done). Never writes. */
export async function waitForTransition(
  core: LedgerCore,
  requestId: string,
  options: WaitOptions = {},
): Promise<LedgerEntry> {
  checkCallSeconds(options)
  const interval = options.pollInterval ?? core.policy.pollInterval
  const timeout = options.pollTimeout === undefined ? core.policy.pollTimeout : options.pollTimeout
  const deadline = timeout === null ? Infinity : core.clock.now() + timeout
  for (;;) {
    const row = await core.store.get(requestId)
    if (!row) throw new LedgerUnknownRequestError(`Cannot wait for unknown request '${clip(requestId)}'`)
    if (resolvedOutcome(row, core.clock.now()) !== "IN_FLIGHT") return row
    if (core.clock.now() >= deadline)
      throw new LedgerPollTimeoutError(`Timed out waiting for request '${clip(requestId)}'`)
    await core.clock.sleep(interval, options.signal)
  }
}
