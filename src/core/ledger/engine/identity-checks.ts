// Identity checks of the claim loop: the row at this request id must be this call, and rows under the same
// tool-call id (dispatch siblings) with another key are never a licence to run.
import type { LedgerCore } from "../core.ts"
import { LedgerError, LedgerHardBlockError, LedgerIdentityConflictError } from "../errors.ts"
import { driftMessage, identityConflictMessage } from "../machine/messages.ts"
import { failedRow } from "../machine/transitions.ts"
import type { ToolTransitionBinding } from "../model/binding.ts"
import type { LedgerEntry } from "../model/entry.ts"
import {
  argsFingerprint,
  type CallMeta,
  resolveScope,
  type TransitionScope,
  transitionKey,
} from "../model/identity.ts"
import type { ClaimRequest } from "./request.ts"

/**
 * A stored row's scope as the original reads it: the binding's `scopeFrom` arguments, overridden by a stored
 * thread_id / run_id / node. The original stores those only when they were passed, so its rows of a `scopeFrom`
 * tool hold the scope in the named arguments alone. (The stored values are read as the metadata they were.) An
 * argument named thread_id is not metadata here, but it is in the row: the sibling check also reads this call's own
 * row that way, or a drifted re-send (or a Python worker's row, keyed by such an argument) slipped past it. A replay
 * is still allowed only by the call's metadata scope: a model's thread_id argument must not reach another thread's row.
 */
function scopeOf(kwargs: Record<string, unknown>, req: ClaimRequest): TransitionScope {
  const k = kwargs as CallMeta & Record<string, string>
  return resolveScope(req.binding?.scopeFrom ?? {}, k, {
    threadId: k.thread_id,
    runId: k.run_id,
    node: k.node,
  })
}

const storedFingerprint = (entry: LedgerEntry, binding: ToolTransitionBinding | null): string =>
  argsFingerprint(entry.kwargs, entry.args, binding?.providerIdempotencyKeyParam)

function drift(core: LedgerCore, req: ClaimRequest, prior: LedgerEntry): never {
  const msg = driftMessage(prior.requestId, req.requestId, prior.tool, req.tool)
  if (core.policy.onArgsDrift === "hard") throw new LedgerHardBlockError(msg)
  throw new LedgerIdentityConflictError(msg, req.tool, {
    priorRequestId: prior.requestId,
    requestId: req.requestId,
  })
}

function sameScope(entry: LedgerEntry, req: ClaimRequest): boolean {
  const s = scopeOf(entry.kwargs, req)
  return s.threadId === req.scope.threadId && s.runId === req.scope.runId && s.node === req.scope.node
}

/** The row at this request id must be this call: same tool, scope and arguments. */
export function checkSameRowIdentity(core: LedgerCore, req: ClaimRequest, observed: LedgerEntry): void {
  if (req.keyedByArgs) {
    // The id is this call's transition key, so a row there is this call's, unless an unbound call named that id
    // and put its own result there: it must not be replayed as this payment's. (Rows from before effect ids,
    // schema 1, lack the flag. The effect id is not compared: the original's rows made inside config.run() with a
    // scope_from argument carry another one than their derived request id.)
    if (observed.schemaVersion > 1 && !observed.effectProtocolRequired) drift(core, req, observed)
  } else {
    // An explicit id must hold this tool, scope and arguments, whatever the drift policy. Any other id must hold this
    // tool, and the tool-call id this scope, whatever the drift policy: a tool without a binding is keyed by the
    // tool-call id alone, and the model writes that id (many models number their calls "call_0", "call_1"... per
    // turn), so the same id for another tool or in another thread is another call, and replaying the stored row would
    // hand it another tool's or another user's result. (A business key from requestIdFrom names its tool and is meant
    // to span scopes.) Its arguments are compared unless the drift policy is off.
    const scoped = req.explicitId || req.requestId === req.dispatchId
    const argsChecked = req.explicitId || core.policy.onArgsDrift !== "off"
    if (
      observed.tool !== req.tool ||
      (scoped && !sameScope(observed, req)) ||
      (argsChecked && storedFingerprint(observed, req.binding) !== req.fingerprint)
    )
      drift(core, req, observed)
  }
  req.ownRow?.(req.requestId)
}

/**
 * The row was claimed under another binding than this call's: this call has none, or another side-effect class,
 * agent or policy version, read from the row's effect id (the transition key of the call that claimed it, with
 * that call's dispatch id and scope). Such a call could otherwise pick the gate that judges someone else's ambiguous
 * payment (a `read` or unbound re-send of its id, even of a derived id named as `requestId`, ran it again), so it
 * is judged by the strictest gate instead; so is a `read` call on a row claimed without a binding. Spendability and
 * retry permission are not in the key: over HTTP they stay the caller's declaration (docs/http-api.md).
 */
export function claimedOtherwise(req: ClaimRequest, row: LedgerEntry): boolean {
  // A row claimed without a binding promised the unclassified gate; a read binding's soft block would re-run it.
  if (!row.effectProtocolRequired) return req.bound && req.binding?.sideEffectClass === "read"
  if (!req.bound) return true
  // A derived id is this binding's own key, and checkSameRowIdentity refused a row there made by any other. The
  // same effect id is the same binding; the row's kwargs lack what else went into it (ambient scope, dispatch id).
  if (req.keyedByArgs || row.effectId === req.effectId) return false
  const k = row.kwargs as CallMeta & Record<string, string>
  const stored = req.explicitId ? req.fingerprint : storedFingerprint(row, req.binding)
  // The binding is this call's in every reading, so any reading that gives the row's effect id means the same
  // binding. The row's kwargs may hold an argument named run_id or node, which reads there as scope: this call's own
  // scope is the other reading (a redispatch under a new tool-call id, as a new model turn gives). The dispatch id
  // was the call's tool-call id (kept in kwargs, unchecked: an argument "" is no bad id of this call), else its
  // explicit id, which is the row's own (an argument named request_id is not read), else none. A wrong guess only
  // fails to match.
  const ids = [k.tool_call_id, row.requestId, null].filter((d) => d === null || d === `${d}`)
  return ![scopeOf(row.kwargs, req), req.scope].some((scope) =>
    ids.some(
      (dispatchId) =>
        transitionKey({
          tool: row.tool,
          binding: req.binding as ToolTransitionBinding,
          argsFingerprint: stored === req.fingerprint ? req.keyFingerprint : stored,
          scope,
          dispatchId,
        }) === row.effectId,
    ),
  )
}

const driftScope = (s: TransitionScope): string => s.runId || s.threadId

/**
 * Rows of the same tool under our tool-call id (and drift scope) but at another request id. Checked after our own
 * claim, so of two racing calls at least one sees the other:
 * - other arguments: a model re-sent the call id with drifted args; the drift policy decides (off, soft, hard);
 * - the same arguments: the key was derived differently (a Python worker's `10.0` where JavaScript sees `10`, or a
 *   changed binding). Running would execute the call a second time, so it fails closed whatever the drift policy.
 * Either way our fresh row is given up first, so it does not sit IN_FLIGHT until its lease lapses.
 */
export async function checkDispatchSiblings(
  core: LedgerCore,
  req: ClaimRequest,
  claimed: LedgerEntry,
  siblings: readonly LedgerEntry[] | undefined,
): Promise<void> {
  if (!req.dispatchId) return
  const found =
    siblings ?? (core.store.canFindByDispatchId ? await core.store.findByDispatchId(req.dispatchId) : [])
  // Either reading of this call's scope counts: this check only ever refuses, so the wider match is the safe one.
  for (const prior of found) {
    if (prior.requestId === req.requestId || prior.tool !== req.tool) continue
    const scope = driftScope(scopeOf(prior.kwargs, req))
    if (scope !== driftScope(req.scope) && scope !== driftScope(scopeOf(claimed.kwargs, req))) continue
    const drifted = storedFingerprint(prior, req.binding) !== req.fingerprint
    if (drifted && core.policy.onArgsDrift === "off") continue
    await giveUp(core, claimed, drifted ? "args drift on a reused dispatch ticket" : "identity conflict")
    if (drifted) drift(core, req, prior)
    throw new LedgerIdentityConflictError(
      identityConflictMessage(req.dispatchId, prior.requestId, req.requestId, req.tool),
      req.tool,
      { priorRequestId: prior.requestId, requestId: req.requestId },
    )
  }
}

async function giveUp(core: LedgerCore, claimed: LedgerEntry, why: string): Promise<void> {
  const failed = failedRow(
    claimed,
    "FAILED_BEFORE_EFFECT",
    `LedgerIdentityConflictError: ${why}`,
    core.clock.now(),
  )
  await core.store
    .tryTransition(failed, { outcomes: ["IN_FLIGHT"], owner: claimed.owner, fence: claimed.fence })
    .catch((e: unknown) => {
      if (!(e instanceof LedgerError)) throw e
    })
}
