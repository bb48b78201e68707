// Operator actions: verdicts on ambiguous transitions, worker-death assertions, listings. ActionLedger exposes
// each as a method.
import type { ActionLedger } from "../action-ledger.ts"
import {
  LedgerAlreadyResolvedError,
  LedgerError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  LedgerWorkerAliveError,
} from "../errors.ts"
import { ageString, remainingString } from "../machine/messages.ts"
import { completedRow } from "../machine/transitions.ts"
import { hasWorkerDeathEvidence, type LedgerEntry, resolvedOutcome } from "../model/entry.ts"
import type { TerminalOutcome } from "../model/enums.ts"

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

/**
 * An operator's verdict on an ambiguous transition. `completed` stores the result; `not_executed` lets the next
 * redispatch run the tool exactly once more. One-shot per transition.
 */
export async function release(
  ledger: ActionLedger,
  requestId: string,
  options: ReleaseOptions,
): Promise<LedgerEntry> {
  const { verified, by, reason } = options
  if (verified !== "completed" && verified !== "not_executed") {
    throw new LedgerReleaseRefusedError(
      `verified must be 'completed' or 'not_executed', got '${String(verified)}'`,
    )
  }
  if (!by?.trim()) throw new LedgerReleaseRefusedError("release requires 'by' (who verified the outcome)")
  if (!reason?.trim()) throw new LedgerReleaseRefusedError("release requires a 'reason'")
  const row = await ledger.store.get(requestId)
  if (!row) throw new LedgerReleaseRefusedError(`Cannot release unknown request '${requestId}'`)
  if (row.operatorResolution) {
    throw new LedgerAlreadyResolvedError(
      `Request '${requestId}' was already released as ${row.operatorResolution} by ${row.resolvedBy}`,
    )
  }
  const now = ledger.clock.now()
  const resolved = resolvedOutcome(row, now)
  if (resolved === "COMPLETED")
    throw new LedgerReleaseRefusedError(`Request '${requestId}' is COMPLETED; nothing to release`)
  if (resolved === "IN_FLIGHT") {
    throw new LedgerReleaseRefusedError(
      `Request '${requestId}' is IN_FLIGHT with a live lease; wait for the lease to expire (EXPIRED is releasable)`,
    )
  }
  const cc = ledger.claimContext
  if (
    resolved === "EXPIRED" &&
    cc.reclaimRequiresDeathSignal &&
    !hasWorkerDeathEvidence(row, now, cc.presumedDeadAfter)
  ) {
    throw aliveError(ledger, row, now)
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
  const ok = await ledger.store.tryTransition(next, {
    outcomes: ["IN_FLIGHT", "BLOCKED", "UNKNOWN", "FAILED_AFTER_EFFECT", "FAILED_BEFORE_EFFECT"],
    owner: row.owner,
    fence: row.fence,
  })
  if (!ok)
    throw new LedgerAlreadyResolvedError(`Cannot release request '${requestId}': transition superseded`)
  return next
}

function aliveError(ledger: ActionLedger, row: LedgerEntry, now: number): LedgerWorkerAliveError {
  const last = row.lastHeartbeatAt ?? row.startedAt
  const grace = ledger.claimContext.presumedDeadAfter - (now - last)
  return new LedgerWorkerAliveError(
    `Cannot release request '${row.requestId}': EXPIRED but worker appears alive (${ageString(now - last)}) — ` +
      `grace window elapses in ${remainingString(grace)}. Use markWorkerDeadFor() first, or wait for the grace window.`,
  )
}

/** An operator asserts the worker behind a transition is dead, so a death-gated reclaim may proceed. */
export async function markWorkerDeadFor(
  ledger: ActionLedger,
  requestId: string,
  options: MarkWorkerDeadOptions,
): Promise<LedgerEntry> {
  if (!options.by?.trim() || !options.reason?.trim()) {
    throw new LedgerReleaseRefusedError("markWorkerDeadFor requires 'by' and 'reason'")
  }
  const row = await ledger.store.get(requestId)
  if (!row) throw new LedgerReleaseRefusedError(`Cannot mark worker dead for unknown request '${requestId}'`)
  const now = ledger.clock.now()
  const resolved = resolvedOutcome(row, now)
  if (resolved !== "IN_FLIGHT" && resolved !== "EXPIRED") {
    throw new LedgerReleaseRefusedError(
      `Request '${requestId}' is ${resolved}; only IN_FLIGHT or EXPIRED rows have a worker`,
    )
  }
  if (
    !options.overrideHeartbeat &&
    !hasWorkerDeathEvidence(row, now, ledger.claimContext.presumedDeadAfter)
  ) {
    throw aliveError(ledger, row, now)
  }
  const next: LedgerEntry = {
    ...row,
    workerDeadAssertedBy: options.by,
    workerDeadAssertedAt: now,
    resolutionReason: options.overrideHeartbeat ? `${options.reason} (heartbeat overridden)` : options.reason,
  }
  return ledger.casFrom(
    row,
    next,
    { outcomes: ["IN_FLIGHT"], owner: row.owner, fence: row.fence },
    "mark worker dead",
  )
}

/** Transitions for operators, oldest first. `stuck` selects what needs a human or a reconciler. */
export async function listTransitions(
  ledger: ActionLedger,
  options: ListTransitionsOptions = {},
): Promise<LedgerEntry[]> {
  const now = ledger.clock.now()
  const stuckAfter = options.inFlightStuckAfter ?? 3600
  const out: LedgerEntry[] = []
  for await (const e of ledger.store.list()) {
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
export async function waitForTransition(
  ledger: ActionLedger,
  requestId: string,
  options: WaitOptions = {},
): Promise<LedgerEntry> {
  const interval = options.pollInterval ?? ledger.pollInterval
  const timeout = options.pollTimeout === undefined ? ledger.pollTimeout : options.pollTimeout
  const deadline = timeout === null ? Number.POSITIVE_INFINITY : ledger.clock.now() + timeout
  for (;;) {
    const row = await ledger.store.get(requestId)
    if (!row) throw new LedgerError(`Cannot wait for unknown request '${requestId}'`)
    if (resolvedOutcome(row, ledger.clock.now()) !== "IN_FLIGHT") return row
    if (ledger.clock.now() >= deadline)
      throw new LedgerPollTimeoutError(`Timed out waiting for request '${requestId}'`)
    await ledger.clock.sleep(interval, options.signal)
  }
}
