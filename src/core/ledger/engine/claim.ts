// The claim loop: turn "this call wants to run" into own-it, return-the-stored-result, wait, or refuse.
// The first attempt is an insert-only claim, so a fresh call costs one storage round trip; existing rows are
// judged by the gates (machine/gates.ts) and taken over only through a fenced reclaim of exactly the row judged.
import { clip } from "../../repr.ts"
import type { ClaimResult } from "../../storage/contract.ts"
import type { LedgerCore } from "../core.ts"
import {
  LedgerHardBlockError,
  LedgerPollTimeoutError,
  LedgerRowError,
  LedgerSoftBlockError,
} from "../errors.ts"
import {
  isAmbiguous,
  notExecutedWaitsForDeath,
  resolveForeignGate,
  resolveReadOnlyGate,
  resolveSideEffectGate,
  resolveUnclassifiedGate,
  unclassifiedReclaimWarns,
} from "../machine/gates.ts"
import { hardBlockMessage } from "../machine/messages.ts"
import {
  LAPSED_OUTCOMES,
  lapsedBlockedRow,
  RELEASABLE_OUTCOMES,
  type ResolutionStamps,
  repairedRow,
  stampClaim,
  stampsOf,
} from "../machine/transitions.ts"
import { effectiveCapability, type ToolTransitionBinding } from "../model/binding.ts"
import { deadAfter, hasWorkerDeathEvidence, type LedgerEntry, resolvedOutcome } from "../model/entry.ts"
import type { TransitionGate } from "../model/enums.ts"
import { asRead, completedOrUnstorable, silentAsRead, stillHeldAsRead } from "./fenced.ts"
import { checkDispatchSiblings, checkSameRowIdentity, claimedOtherwise } from "./identity-checks.ts"
import type { ClaimOutcome, ClaimRequest } from "./request.ts"

export async function claimTransition(core: LedgerCore, req: ClaimRequest): Promise<ClaimOutcome> {
  // The first attempt of every call, without the loop's closures: insert, or find the row (a replay returns here).
  const first = await claimOver(core, req, null)
  if (first.outcome === "claimed") {
    // Nothing to check (and no await) when the store read no siblings in the claim's own step.
    if (req.dispatchId && first.dispatchSiblings?.length !== 0)
      await checkDispatchSiblings(core, req, first.entry, first.dispatchSiblings)
    return { owned: true, entry: first.entry, authorizedReexec: false }
  }
  const row = first.entry
  checkSameRowIdentity(core, req, row)
  if (gateFor(req, row, core.clock.now()) === "RETURN") return { owned: false, entry: row }
  // Anything else is judged again, from the identity check on, by the loop. Awaited, not returned: the loop can
  // reject before its first await, and a returned promise gets its handler a microtask later, which workerd has
  // reported as an unhandled rejection.
  return await claimLoop(core, req, row)
}

const INSERT_ONLY = { reclaimFence: null }

/**
 * One atomic claim: insert when nothing was observed (`prior` null), else take over exactly the observed row.
 * Siblings under the tool-call id are read whenever there is one: a row there with another key must never become
 * a licence to run (engine/identity-checks.ts).
 */
function claimOver(
  core: LedgerCore,
  req: ClaimRequest,
  prior: LedgerEntry | null,
  silentFor?: number,
): Promise<ClaimResult> {
  const reclaimFence = prior ? prior.fence : null
  return core.store.claim(
    req.requestId,
    () => req.fresh(prior),
    req.leaseTtl,
    core.clock.now(),
    req.dispatchId
      ? { reclaimFence, dispatchId: req.dispatchId, silentFor }
      : reclaimFence === null
        ? INSERT_ONLY
        : { reclaimFence, silentFor },
  )
}

function gateFor(req: ClaimRequest, row: LedgerEntry, now: number): TransitionGate {
  return claimedOtherwise(req, row)
    ? resolveForeignGate(row, now)
    : req.mode === "read"
      ? resolveReadOnlyGate(row, now)
      : req.mode === "unclassified"
        ? resolveUnclassifiedGate(row, now)
        : resolveSideEffectGate(row, req.binding as ToolTransitionBinding, req.providerKey, now)
}

async function claimLoop(core: LedgerCore, req: ClaimRequest, firstSeen: LedgerEntry): Promise<ClaimOutcome> {
  const deadline = req.pollTimeout === null ? Infinity : core.clock.now() + req.pollTimeout
  let observed: LedgerEntry | null = firstSeen
  let refusedRepairs = 0

  const own = async (
    entry: LedgerEntry,
    authorizedReexec: boolean,
    siblings?: readonly LedgerEntry[],
  ): Promise<ClaimOutcome> => {
    await checkDispatchSiblings(core, req, entry, siblings)
    return { owned: true, entry, authorizedReexec }
  }

  /** A claim (claimOver) that owns the row, or null with the row it found observed. */
  const claim = async (prior: LedgerEntry | null, silentFor?: number): Promise<ClaimOutcome | null> => {
    const r = await claimOver(core, req, prior, silentFor)
    if (r.outcome === "claimed") return own(r.entry, false, r.dispatchSiblings)
    observed = r.entry
    // The store kept the row this call judged lapsed, still held under the same fence (a store on another clock, as
    // HttpLedgerStorage's server is): poll it, within pollTimeout, instead of re-sending the claim at once. Then it
    // is judged as it is by then: its holder, live all along, may have moved the boundary, which a reclaim by the
    // fence alone would take over. As it judged it: a legacy row stores EXPIRED, and re-sent at once it spun.
    if (prior && stillHeldAsRead(r.entry, prior)) {
      await wait("polling in-flight")
      observed = await core.store.get(req.requestId)
    }
    return null
  }

  const wait = async (label: string): Promise<void> => {
    if (core.clock.now() >= deadline)
      throw new LedgerPollTimeoutError(
        `Timed out ${label} request '${clip(req.requestId)}'; retry later or raise pollTimeout`,
      )
    await core.clock.sleep(req.pollInterval, req.signal)
  }

  /** Sleeps until the row leaves IN_FLIGHT (held or unbounded). Never touches the row: the owner may be alive. */
  const poll = async (): Promise<LedgerEntry | null> => {
    for (;;) {
      await wait(req.mode === "read" ? "polling read-only" : "polling in-flight")
      const row = await core.store.get(req.requestId)
      if (!row || resolvedOutcome(row, core.clock.now()) !== "IN_FLIGHT") return row
    }
  }

  /** Hard block: settle by an operator's or reconciler's verdict, else refuse (lapsed leases become BLOCKED). */
  const hardBlock = async (row: LedgerEntry): Promise<ClaimOutcome | null> => {
    const next = await settleOrBlock(core, req, row)
    if (next.kind === "owned") return own(next.entry, true)
    if (next.kind === "return") return { owned: false, entry: next.entry }
    observed = next.kind === "poll" ? await poll() : next.entry
    return null
  }

  for (;;) {
    if (observed === null) {
      const done = await claim(null)
      if (done) return done
      continue
    }
    const row: LedgerEntry = observed
    checkSameRowIdentity(core, req, row)
    const now = core.clock.now()
    const resolved = resolvedOutcome(row, now)
    const gate = gateFor(req, row, now)

    let done: ClaimOutcome | null = null
    switch (gate) {
      case "REPAIR":
        // A store that reads a field otherwise than the decoder (a null boundary or outcome) refuses every repair:
        // retrying at once spun without end, past pollTimeout.
        if (!(await core.store.tryTransition(repairedRow(row, now), asRead(row))) && ++refusedRepairs > 2)
          throw new LedgerRowError(
            `The store refuses every repair of request '${clip(req.requestId)}': repair or delete its row`,
          )
        observed = await core.store.get(req.requestId)
        continue
      case "RETURN":
        return { owned: false, entry: row }
      case "POLL":
        observed = await poll()
        continue
      case "SOFT_BLOCK": {
        if (core.policy.deferReadOnlyUnknown) {
          throw new LedgerSoftBlockError(
            `Read-only tool '${req.tool}' request '${clip(req.requestId)}' is ${resolved}: safe to defer and retry`,
          )
        }
        const reset = await resetTo(core, req, row)
        if (reset) return own(reset, false)
        observed = await core.store.get(req.requestId)
        continue
      }
      case "HARD_BLOCK":
        done = await hardBlock(row)
        break
      case "RECLAIM":
      case "ALLOW": {
        if (req.mode === "unclassified") {
          if (unclassifiedReclaimWarns(resolved)) {
            core.warnOnce(
              `unclassified:${req.tool}`,
              `Tool '${req.tool}' has no binding, so re-running its ${resolved} transition may duplicate an effect: declare a side-effect class.`,
            )
          }
          done = await claim(row)
          break
        }
        if (resolved === "UNKNOWN") {
          // ALLOW on UNKNOWN: same provider key, still valid. Prefer a verdict from operator or provider first.
          const settled = await settle(core, req, row)
          if (settled?.kind === "owned") return own(settled.entry, true)
          if (settled?.kind === "return") return { owned: false, entry: settled.entry }
          if (isBlind(core, req)) {
            done = await hardBlock(row)
            break
          }
          const reset = await resetTo(core, req, row)
          if (reset) return own(reset, true)
          observed = await core.store.get(req.requestId)
          continue
        }
        if (req.mode === "side_effect" && isAmbiguous(row, now) && isBlind(core, req)) {
          done = await hardBlock(row)
          break
        }
        // The death-signal gate guards only leases that lapsed: a FAILED row's worker has already let go.
        const gated = core.policy.reclaimRequiresDeathSignal && resolved === "EXPIRED"
        if (gated && !hasWorkerDeathEvidence(row, now, deadAfter(row, core.policy))) {
          await wait("waiting for worker death evidence on")
          observed = await core.store.get(req.requestId)
          continue
        }
        // Reclaimed on the heartbeat silence this clock read: a store on a clock of its own checks it by that clock.
        done = await claim(row, gated ? silentAsRead(core, row) : undefined)
        break
      }
    }
    if (done) return done
  }
}

function isBlind(core: LedgerCore, req: ClaimRequest): boolean {
  return req.binding !== null && effectiveCapability(req.binding, core.policy.reconciler !== null) === "blind"
}

/** CAS the exact observed row to a fresh in-flight claim of ours (fence + 1). */
async function resetTo(
  core: LedgerCore,
  req: ClaimRequest,
  observed: LedgerEntry,
  stamps?: ResolutionStamps,
  silentFor?: number,
): Promise<LedgerEntry | null> {
  const claimed = stampClaim(req.fresh(observed), observed, req.leaseTtl, core.clock.now())
  const next = stamps ? { ...claimed, ...stamps } : claimed
  return (await core.store.tryTransition(next, asRead(observed, undefined, silentFor))) ? next : null
}

type Settled =
  | { kind: "owned"; entry: LedgerEntry }
  | { kind: "return"; entry: LedgerEntry }
  | { kind: "poll" }
  | { kind: "reread"; entry: LedgerEntry | null }

/** An operator's one-shot `not_executed` release, or a reconciler's verdict on the external operation. */
async function settle(core: LedgerCore, req: ClaimRequest, observed: LedgerEntry): Promise<Settled | null> {
  const reconciler = core.policy.reconciler
  if (observed.operatorResolution === "not_executed") {
    const fresh = await reexecute(core, req, observed, stampsOf(observed))
    return fresh ? { kind: "owned", entry: fresh } : reread(core, observed)
  }
  if (!reconciler || !observed.externalOperationRef) return null
  let verdict: Awaited<ReturnType<typeof reconciler.reconcile>>
  try {
    verdict = await reconciler.reconcile(observed)
  } catch {
    return null
  }
  if (verdict.status === "COMPLETED") {
    if (observed.effectProtocolRequired && !observed.decision?.allowed) return null
    // A result the store cannot hold is recorded as the tool path records it (replays raise), not thrown bare.
    const done = completedOrUnstorable(core, observed, verdict.result ?? null)
    const ok = await core.store.tryTransition(done, asRead(observed, RELEASABLE_OUTCOMES))
    return ok ? { kind: "return", entry: done } : reread(core, observed)
  }
  if (verdict.status === "NOT_EXECUTED") {
    if (notExecutedWaitsForDeath(observed, core.clock.now(), deadAfter(observed, core.policy))) return null
    const fresh = await reexecute(core, req, observed, undefined, silentAsRead(core, observed))
    return fresh ? { kind: "owned", entry: fresh } : reread(core, observed)
  }
  return null
}

/** The row again after a write decided on `judged` lost; a poll when the store still holds that claim unmoved. */
async function reread(core: LedgerCore, judged: LedgerEntry): Promise<Settled> {
  const row = await core.store.get(judged.requestId)
  return stillHeldAsRead(row, judged) ? { kind: "poll" } : { kind: "reread", entry: row }
}

/** A verdict said the effect did not happen: one fresh claim, never two (IN_FLIGHT is not a source state). */
async function reexecute(
  core: LedgerCore,
  req: ClaimRequest,
  observed: LedgerEntry,
  stamps?: ResolutionStamps,
  /** The holder's heartbeat silence this verdict is acted on by (TransitionExpectation.silentFor). */
  silentFor?: number,
): Promise<LedgerEntry | null> {
  let from = observed
  if (resolvedOutcome(observed, core.clock.now()) === "EXPIRED") {
    const blocked = await markExpiredBlocked(core, observed)
    if (!blocked) return null
    from = blocked
  }
  if (from.terminalOutcome === "IN_FLIGHT" || from.terminalOutcome === "COMPLETED") return null
  return await resetTo(core, req, from, stamps, silentFor)
}

async function markExpiredBlocked(core: LedgerCore, observed: LedgerEntry): Promise<LedgerEntry | null> {
  const blocked = lapsedBlockedRow(observed, core.clock.now())
  // A legacy row (and a field repair of one) stores EXPIRED itself: expecting IN_FLIGHT only, the write never landed
  // and the hard-block path re-read the same row without end.
  const ok = await core.store.tryTransition(blocked, asRead(observed, LAPSED_OUTCOMES))
  return ok ? blocked : null
}

/**
 * The hard-block path: settle if a verdict exists, else convert a lapsed lease to BLOCKED and refuse. A call under
 * another binding neither settles nor marks: the release, verdict or lapsed lease is its own binding's to act on.
 */
async function settleOrBlock(core: LedgerCore, req: ClaimRequest, observed: LedgerEntry): Promise<Settled> {
  const foreign = claimedOtherwise(req, observed)
  const settled = foreign ? null : await settle(core, req, observed)
  if (settled) return settled
  const row = await core.store.get(req.requestId)
  if (!row) return { kind: "reread", entry: null }
  const now = core.clock.now()
  const resolved = resolvedOutcome(row, now)
  if (resolved === "IN_FLIGHT") return { kind: "poll" }
  if (resolved === "COMPLETED") return { kind: "return", entry: row }
  if (row.fence !== observed.fence || row.terminalOutcome !== observed.terminalOutcome) {
    return { kind: "reread", entry: row }
  }
  if (resolved === "EXPIRED" && !foreign && !(await markExpiredBlocked(core, row))) return reread(core, row)
  throw new LedgerHardBlockError(hardBlockMessage(row, resolved, req.binding, now))
}
