// Claim loops: turn "this call wants to run" into own-it, return-the-stored-result, wait, or refuse.
// The first attempt is an insert-only claim, so a fresh call costs one storage round trip; existing rows are
// judged by the gates and taken over only through a fenced reclaim of exactly the row that was judged.
import { effectiveCapability, type ToolTransitionBinding } from "./binding.ts"
import type { Clock } from "./clock.ts"
import {
  hasWorkerDeathEvidence,
  type LedgerEntry,
  leaseLapsed,
  repairFields,
  resolvedOutcome,
} from "./entry.ts"
import type { ArgsDriftPolicy } from "./enums.ts"
import {
  LedgerError,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerPollTimeoutError,
  LedgerSoftBlockError,
} from "./errors.ts"
import { isAmbiguous, resolveReadOnlyGate, resolveSideEffectGate } from "./gates.ts"
import { argsFingerprint, type TransitionScope } from "./identity.ts"
import { driftMessage, hardBlockMessage } from "./messages.ts"
import type { Reconciler } from "./reconcile.ts"
import { lapsedBlockedRow } from "./rows.ts"
import type { SafeStorage } from "./safe-storage.ts"
import { type ClaimResult, stampClaim } from "./storage.ts"

export interface ClaimContext {
  readonly store: SafeStorage
  readonly clock: Clock
  readonly reconciler: Reconciler | null
  readonly deferReadOnlyUnknown: boolean
  readonly onArgsDrift: ArgsDriftPolicy
  readonly reclaimRequiresDeathSignal: boolean
  readonly presumedDeadAfter: number
  warn(key: string, message: string): void
}

export interface ClaimRequest {
  readonly tool: string
  readonly requestId: string
  /** The caller named the request id: identity conflicts are checked even with drift policy "off". */
  readonly explicitId: boolean
  /** The request id hashes the args fingerprint, so a row at this id has these arguments. */
  readonly keyedByArgs: boolean
  readonly binding: ToolTransitionBinding | null
  readonly fingerprint: string
  readonly scope: TransitionScope
  readonly dispatchId: string | null
  readonly providerKey: string | null
  readonly leaseTtl: number
  readonly pollInterval: number
  readonly pollTimeout: number | null
  readonly signal?: AbortSignal
  /** A new in-flight row (unstamped) for this call. */
  fresh(prior: LedgerEntry | null): LedgerEntry
}

export type ClaimOutcome =
  | { readonly owned: false; readonly entry: LedgerEntry }
  | { readonly owned: true; readonly entry: LedgerEntry; readonly authorizedReexec: boolean }

type Mode = "read" | "side_effect" | "unclassified"

export async function claimTransition(
  ctx: ClaimContext,
  req: ClaimRequest,
  mode: Mode,
): Promise<ClaimOutcome> {
  const { clock, store } = ctx
  const deadline = req.pollTimeout === null ? Number.POSITIVE_INFINITY : clock.now() + req.pollTimeout
  let observed: LedgerEntry | null = null

  const own = async (r: ClaimResult, authorizedReexec = false): Promise<ClaimOutcome> => {
    if (r.outcome === "claimed") {
      await checkDispatchSiblings(ctx, req, r)
      return { owned: true, entry: r.entry, authorizedReexec }
    }
    return { owned: false, entry: r.entry }
  }

  const wait = async (label: string): Promise<void> => {
    if (clock.now() >= deadline)
      throw new LedgerPollTimeoutError(`Timed out ${label} request '${req.requestId}'`)
    await clock.sleep(req.pollInterval, req.signal)
  }

  /** Sleeps until the row leaves IN_FLIGHT (held or unbounded). Never touches the row: the owner may be alive. */
  const poll = async (): Promise<LedgerEntry | null> => {
    for (;;) {
      await wait(mode === "read" ? "polling read-only" : "polling in-flight")
      const row = await store.get(req.requestId)
      if (!row || resolvedOutcome(row, clock.now()) !== "IN_FLIGHT") return row
    }
  }

  for (;;) {
    if (observed === null) {
      const r = await store.tryClaimInflight(req.fresh(null), req.leaseTtl, clock.now(), {
        reclaimFence: null,
        ...(req.dispatchId && ctx.onArgsDrift !== "off" ? { dispatchId: req.dispatchId } : {}),
      })
      if (r.outcome === "claimed") return own(r)
      observed = r.entry
    }
    checkSameRowIdentity(ctx, req, observed)
    const now = clock.now()
    const resolved = resolvedOutcome(observed, now)

    if (mode === "unclassified") {
      // No binding: the original's legacy claim, except live rows are polled and ambiguous rows refuse loudly.
      if (resolved === "COMPLETED") return { owned: false, entry: observed }
      if (resolved === "IN_FLIGHT") {
        observed = await poll()
        continue
      }
      if (resolved === "BLOCKED" || resolved === "UNKNOWN") {
        // An operator release or a reconciler verdict still applies; otherwise this refuses.
        const next = await settleOrBlock(ctx, req, observed)
        if (next.kind === "owned") return { owned: true, entry: next.entry, authorizedReexec: true }
        if (next.kind === "return") return { owned: false, entry: next.entry }
        observed = next.kind === "poll" ? await poll() : next.entry
        continue
      }
      if (resolved !== "EXPIRED") {
        ctx.warn(
          `unclassified:${req.tool}`,
          `Tool '${req.tool}' is ledgered without a transition binding; re-running its ${resolved} transition may duplicate an external effect. Declare a side-effect class.`,
        )
      }
      const r = await store.tryClaimInflight(req.fresh(observed), req.leaseTtl, now, {
        reclaimFence: observed.fence,
      })
      if (r.outcome === "claimed") return own(r)
      observed = r.entry
      continue
    }

    const gate =
      mode === "read"
        ? resolveReadOnlyGate(observed, now)
        : resolveSideEffectGate(observed, req.binding as ToolTransitionBinding, req.providerKey, now)

    switch (gate) {
      case "REPAIR": {
        const fixed = { ...observed, ...repairFields(observed, now) }
        await store.tryTransition(fixed, {
          outcomes: [observed.terminalOutcome],
          owner: observed.owner,
          fence: observed.fence,
        })
        observed = await store.get(req.requestId)
        continue
      }
      case "RETURN":
        return { owned: false, entry: observed }
      case "POLL":
        observed = await poll()
        continue
      case "SOFT_BLOCK": {
        if (ctx.deferReadOnlyUnknown) {
          throw new LedgerSoftBlockError(
            `Read-only tool '${req.tool}' request '${req.requestId}' is ${resolved}; soft-blocked — safe to defer and retry`,
          )
        }
        const reset = await resetTo(ctx, req, observed)
        if (reset) return { owned: true, entry: reset, authorizedReexec: false }
        observed = await store.get(req.requestId)
        continue
      }
      case "HARD_BLOCK": {
        const next = await settleOrBlock(ctx, req, observed)
        if (next.kind === "owned") return { owned: true, entry: next.entry, authorizedReexec: true }
        if (next.kind === "return") return { owned: false, entry: next.entry }
        observed = next.kind === "poll" ? await poll() : next.entry
        continue
      }
      case "RECLAIM":
      case "ALLOW": {
        if (resolved === "UNKNOWN") {
          // ALLOW on UNKNOWN: same provider key, still valid. Prefer a verdict from operator or provider first.
          const settled = await settle(ctx, req, observed)
          if (settled) {
            if (settled.kind === "owned") return { owned: true, entry: settled.entry, authorizedReexec: true }
            if (settled.kind === "return") return { owned: false, entry: settled.entry }
          }
          if (isBlind(ctx, req)) {
            const next = await settleOrBlock(ctx, req, observed)
            if (next.kind === "owned") return { owned: true, entry: next.entry, authorizedReexec: true }
            if (next.kind === "return") return { owned: false, entry: next.entry }
            observed = next.kind === "poll" ? await poll() : next.entry
            continue
          }
          const reset = await resetTo(ctx, req, observed)
          if (reset) return { owned: true, entry: reset, authorizedReexec: true }
          observed = await store.get(req.requestId)
          continue
        }
        if (mode === "side_effect" && isAmbiguous(observed, now) && isBlind(ctx, req)) {
          const next = await settleOrBlock(ctx, req, observed)
          if (next.kind === "owned") return { owned: true, entry: next.entry, authorizedReexec: true }
          if (next.kind === "return") return { owned: false, entry: next.entry }
          observed = next.kind === "poll" ? await poll() : next.entry
          continue
        }
        // The death-signal gate guards only leases that lapsed: a FAILED row's worker has already let go.
        if (
          ctx.reclaimRequiresDeathSignal &&
          resolved === "EXPIRED" &&
          !hasWorkerDeathEvidence(observed, now, ctx.presumedDeadAfter)
        ) {
          await wait("waiting for worker death evidence on")
          observed = await store.get(req.requestId)
          continue
        }
        const r = await store.tryClaimInflight(req.fresh(observed), req.leaseTtl, now, {
          reclaimFence: observed.fence,
        })
        if (r.outcome === "claimed") return own(r)
        observed = r.entry
        continue
      }
    }
  }
}

function isBlind(ctx: ClaimContext, req: ClaimRequest): boolean {
  return req.binding !== null && effectiveCapability(req.binding, ctx.reconciler !== null) === "blind"
}

/** CAS the exact observed row to a fresh in-flight claim of ours (fence + 1). */
async function resetTo(
  ctx: ClaimContext,
  req: ClaimRequest,
  observed: LedgerEntry,
  stamps: Partial<LedgerEntry> = {},
): Promise<LedgerEntry | null> {
  const now = ctx.clock.now()
  const next = { ...stampClaim(req.fresh(observed), observed, req.leaseTtl, now), ...stamps }
  const ok = await ctx.store.tryTransition(next, {
    outcomes: [observed.terminalOutcome],
    owner: observed.owner,
    fence: observed.fence,
  })
  return ok ? next : null
}

type Settled =
  | { kind: "owned"; entry: LedgerEntry }
  | { kind: "return"; entry: LedgerEntry }
  | { kind: "poll" }
  | { kind: "reread"; entry: LedgerEntry | null }

/** An operator's one-shot `not_executed` release, or a reconciler's verdict on the external operation. */
async function settle(ctx: ClaimContext, req: ClaimRequest, observed: LedgerEntry): Promise<Settled | null> {
  const { store, clock } = ctx
  if (observed.operatorResolution === "not_executed") {
    const stamps: Partial<LedgerEntry> = {
      resolvedBy: observed.resolvedBy,
      resolutionReason: observed.resolutionReason,
      resolvedAt: observed.resolvedAt,
      releasedFromOutcome: observed.releasedFromOutcome,
    }
    const fresh = await reexecute(ctx, req, observed, stamps)
    return fresh ? { kind: "owned", entry: fresh } : { kind: "reread", entry: await store.get(req.requestId) }
  }
  if (!ctx.reconciler || !observed.externalOperationRef) return null
  let verdict: Awaited<ReturnType<Reconciler["reconcile"]>>
  try {
    verdict = await ctx.reconciler.reconcile(observed)
  } catch {
    return null
  }
  if (verdict.status === "COMPLETED") {
    if (observed.effectProtocolRequired && !observed.decision?.allowed) return null
    const now = clock.now()
    const done: LedgerEntry = {
      ...observed,
      terminalOutcome: "COMPLETED",
      status: "completed",
      result: verdict.result ?? null,
      sideEffectBoundary: "crossed",
      effectPhase: "COMMITTED",
      leaseUntil: null,
      finishedAt: now,
      error: null,
    }
    const ok = await store.tryTransition(done, {
      outcomes: ["IN_FLIGHT", "BLOCKED", "UNKNOWN", "FAILED_AFTER_EFFECT", "FAILED_BEFORE_EFFECT"],
      owner: observed.owner,
      fence: observed.fence,
    })
    return ok ? { kind: "return", entry: done } : { kind: "reread", entry: await store.get(req.requestId) }
  }
  if (verdict.status === "NOT_EXECUTED") {
    // The provider has not seen the call yet, but a lapsed lease's owner may be alive inside its effect and about
    // to make it: the same death-signal rule as an operator's not_executed release.
    const now = clock.now()
    if (leaseLapsed(observed, now) && !hasWorkerDeathEvidence(observed, now, ctx.presumedDeadAfter))
      return null
    const fresh = await reexecute(ctx, req, observed, {})
    return fresh ? { kind: "owned", entry: fresh } : { kind: "reread", entry: await store.get(req.requestId) }
  }
  return null
}

/** A verdict said the effect did not happen: one fresh claim, never two (IN_FLIGHT is not a source state). */
async function reexecute(
  ctx: ClaimContext,
  req: ClaimRequest,
  observed: LedgerEntry,
  stamps: Partial<LedgerEntry>,
): Promise<LedgerEntry | null> {
  let from = observed
  if (resolvedOutcome(observed, ctx.clock.now()) === "EXPIRED") {
    const blocked = await markExpiredBlocked(ctx, observed)
    if (!blocked) return null
    from = blocked
  }
  if (from.terminalOutcome === "IN_FLIGHT" || from.terminalOutcome === "COMPLETED") return null
  return resetTo(ctx, req, from, stamps)
}

async function markExpiredBlocked(ctx: ClaimContext, observed: LedgerEntry): Promise<LedgerEntry | null> {
  // The error text keeps the lapse visible (`leaseLapsed`): a `not_executed` release still needs a death signal.
  const blocked = lapsedBlockedRow(observed)
  const ok = await ctx.store.tryTransition(blocked, {
    outcomes: ["IN_FLIGHT"],
    owner: observed.owner,
    fence: observed.fence,
  })
  return ok ? blocked : null
}

/** The hard-block path: settle if a verdict exists, else convert a lapsed lease to BLOCKED and refuse. */
async function settleOrBlock(ctx: ClaimContext, req: ClaimRequest, observed: LedgerEntry): Promise<Settled> {
  const settled = await settle(ctx, req, observed)
  if (settled) return settled
  const { store, clock } = ctx
  const row = await store.get(req.requestId)
  if (!row) return { kind: "reread", entry: null }
  const now = clock.now()
  const resolved = resolvedOutcome(row, now)
  if (resolved === "IN_FLIGHT") return { kind: "poll" }
  if (resolved === "COMPLETED") return { kind: "return", entry: row }
  if (row.fence !== observed.fence || row.terminalOutcome !== observed.terminalOutcome) {
    return { kind: "reread", entry: row }
  }
  if (resolved === "EXPIRED" && !(await markExpiredBlocked(ctx, row))) {
    return { kind: "reread", entry: await store.get(req.requestId) }
  }
  throw new LedgerHardBlockError(hardBlockMessage(row, resolved, req.binding, now))
}

function scopeOf(entry: LedgerEntry): TransitionScope {
  const k = entry.kwargs
  const s = (v: unknown): string => (typeof v === "string" ? v : "")
  return { threadId: s(k.thread_id), runId: s(k.run_id), node: s(k.node) }
}

const storedFingerprint = (entry: LedgerEntry, binding: ToolTransitionBinding | null): string =>
  argsFingerprint(entry.kwargs, entry.args, binding?.providerIdempotencyKeyParam)

function conflict(
  ctx: ClaimContext,
  req: ClaimRequest,
  prior: LedgerEntry,
  always: boolean,
): never | undefined {
  if (!always && ctx.onArgsDrift === "off") return
  const msg = driftMessage(prior.requestId, req.requestId, prior.tool, req.tool)
  if (ctx.onArgsDrift === "hard") throw new LedgerHardBlockError(msg)
  throw new LedgerIdentityConflictError(msg, req.tool)
}

/** The row at this request id must be this call: same tool, scope and arguments. */
function checkSameRowIdentity(ctx: ClaimContext, req: ClaimRequest, observed: LedgerEntry): void {
  if (req.explicitId) {
    const s = scopeOf(observed)
    const sameScope =
      s.threadId === req.scope.threadId && s.runId === req.scope.runId && s.node === req.scope.node
    if (
      observed.tool !== req.tool ||
      !sameScope ||
      storedFingerprint(observed, req.binding) !== req.fingerprint
    ) {
      conflict(ctx, req, observed, true)
    }
    return
  }
  if (req.keyedByArgs || ctx.onArgsDrift === "off") return
  if (storedFingerprint(observed, req.binding) !== req.fingerprint) conflict(ctx, req, observed, false)
}

const driftScope = (s: TransitionScope): string => s.runId || s.threadId

/**
 * Same tool, same dispatch ticket, other arguments: a model re-sent a call id with drifted args. Checked after our
 * own insert, so of two racing drifted calls at least one sees the other.
 */
async function checkDispatchSiblings(
  ctx: ClaimContext,
  req: ClaimRequest,
  r: Extract<ClaimResult, { outcome: "claimed" }>,
): Promise<void> {
  if (!req.dispatchId || ctx.onArgsDrift === "off" || r.entry.fence !== 1) return
  const siblings =
    r.dispatchSiblings ??
    (ctx.store.canFindByDispatchId ? await ctx.store.findByDispatchId(req.dispatchId) : [])
  for (const prior of siblings) {
    if (prior.requestId === req.requestId || prior.tool !== req.tool) continue
    if (driftScope(scopeOf(prior)) !== driftScope(req.scope)) continue
    if (storedFingerprint(prior, req.binding) === req.fingerprint) continue
    // Give our fresh row up before refusing, so it does not sit IN_FLIGHT until its lease lapses.
    const failed: LedgerEntry = {
      ...r.entry,
      terminalOutcome: "FAILED_BEFORE_EFFECT",
      status: "failed",
      error: "LedgerIdentityConflictError: args drift on a reused dispatch ticket",
      leaseUntil: null,
      finishedAt: ctx.clock.now(),
      effectPhase: "ABORTED",
    }
    await ctx.store
      .tryTransition(failed, { outcomes: ["IN_FLIGHT"], owner: r.entry.owner, fence: r.entry.fence })
      .catch((e: unknown) => {
        if (!(e instanceof LedgerError)) throw e
      })
    conflict(ctx, req, prior, false)
  }
}
