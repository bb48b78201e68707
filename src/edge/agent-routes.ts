// `ledger:agent`: ledgered calls run on the server with the server's clock. The agent never writes a row: it
// begins a call and then, holding the secret lease and the fence, moves that one row forward.

import { MyceliumError } from "../core/errors.ts"
import {
  type CallMeta,
  type Decision,
  LedgerConfigError,
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerPollTimeoutError,
  LedgerSoftBlockError,
  ToolTransitionBinding,
  type ToolTransitionBindingInit,
} from "../core/ledger/index.ts"
import { throwIfUnstorable } from "../core/ledger/machine/unstorable.ts"
import { requestIdFromArgument } from "../core/ledger/model/identity.ts"
import { MAX_ID } from "./body.ts"
import type { Api, RouteContext } from "./context.ts"
import { HttpError } from "./errors.ts"
import { mintLease, ownerForLease } from "./lease.ts"
import { BeginCallBody, BoundaryBody, CompleteBody, FailBody, RenewBody } from "./schemas.ts"
import { forgedReleaseAt } from "./storable.ts"

const ALLOWED: Decision = Object.freeze({ allowed: true, verdicts: [], deniedReasons: [] })

type BindingWire = NonNullable<ReturnType<typeof BeginCallBody.parse>["binding"]>
type MetaWire = NonNullable<ReturnType<typeof BeginCallBody.parse>["meta"]>

function bindingFrom(b: BindingWire): ToolTransitionBinding {
  const init: ToolTransitionBindingInit = {
    agentId: b.agent_id,
    policyVersion: b.policy_version,
    // Any string from the wire: ToolTransitionBinding.from below refuses an unknown class (invalid_binding).
    sideEffectClass: b.side_effect_class as ToolTransitionBindingInit["sideEffectClass"],
    ...(b.scope_from ? { scopeFrom: b.scope_from } : {}),
    ...(b.retry_permission ? { retryPermission: b.retry_permission } : {}),
    ...(b.side_effect_boundary_default ? { sideEffectBoundaryDefault: b.side_effect_boundary_default } : {}),
    ...(b.spendability ? { spendability: b.spendability } : {}),
    ...(b.capability ? { capability: b.capability } : {}),
    ...(b.provider_idempotency_key_param
      ? { providerIdempotencyKeyParam: b.provider_idempotency_key_param }
      : {}),
    ...(b.provider_idempotency_key_ttl ? { providerIdempotencyKeyTtl: b.provider_idempotency_key_ttl } : {}),
    ...(b.request_id_from ? { requestIdFrom: b.request_id_from } : {}),
  }
  try {
    return ToolTransitionBinding.from(init)
  } catch (e) {
    // A refusal with its own code (tool_capability_declaration) speaks for itself; a bad field is the binding's.
    if (e instanceof MyceliumError && e.code !== "invalid_option") throw e
    throw new HttpError("invalid_binding", `binding: ${e instanceof Error ? e.message : String(e)}`)
  }
}

function metaFrom(m: MetaWire | undefined): CallMeta {
  if (!m) return {}
  const out: CallMeta = {}
  if (m.request_id !== undefined) out.requestId = m.request_id
  if (m.tool_call_id !== undefined) out.toolCallId = m.tool_call_id
  if (m.thread_id !== undefined) out.threadId = m.thread_id
  if (m.run_id !== undefined) out.runId = m.run_id
  if (m.node !== undefined) out.node = m.node
  if (m.state_ref !== undefined) out.stateRef = m.state_ref
  if (m.decision_id !== undefined) out.decisionId = m.decision_id
  if (m.parent_request_id !== undefined) out.parentRequestId = m.parent_request_id
  if (m.handoff_id !== undefined) out.handoffId = m.handoff_id
  return out
}

/** What the holder may see of its row (never the owner: that is derived from the secret). */
function callState(e: LedgerEntry) {
  return {
    request_id: e.requestId,
    fence: e.fence,
    terminal_outcome: e.terminalOutcome,
    side_effect_boundary: e.sideEffectBoundary,
    effect_phase: e.effectPhase,
    lease_until: e.leaseUntil,
    external_operation_ref: e.externalOperationRef,
  }
}

export function agentRoutes(api: Api, ctx: RouteContext): void {
  api.post("/v1/calls", async (c) => {
    const tenant = ctx.need(c, "agent")
    const b = await ctx.body(c, BeginCallBody, "args")
    const binding = b.binding ? bindingFrom(b.binding) : undefined
    // In process such a call runs under a random id and warns; here the warning reaches nobody, and every retry of
    // the call would run it again.
    if (!binding && b.meta?.request_id === undefined && b.meta?.tool_call_id === undefined)
      throw new HttpError(
        "missing_request_identity",
        "a call without a binding needs meta.request_id or meta.tool_call_id, or it runs again on every retry (nothing was run)",
      )
    const field = b.meta?.request_id === undefined && binding?.requestIdFrom
    // The one id the body can make longer than a call's routes accept: its row could never be completed or released.
    const from = field ? requestIdFromArgument(b.tool, field, b.args ?? {}) : ""
    if (from.length > MAX_ID)
      throw new HttpError(
        "invalid_request_id",
        `request_id_from gives a request id of ${from.length} characters, over the ${MAX_ID} a call's routes accept: shorten the '${field}' argument or pass meta.request_id (nothing was run)`,
      )
    const ttl = Math.min(b.lease_ttl ?? ctx.defaultLeaseTtl, ctx.maxLeaseTtl)
    const lease = mintLease()
    const ledger = ctx.claimLedger(tenant, ownerForLease(lease), ttl)
    try {
      const out = await ledger.claim({
        tool: b.tool,
        args: b.args ?? {},
        meta: metaFrom(b.meta),
        leaseTtl: ttl,
        // As ledger.tool() does without predicates: the allowed decision rides on the claim write.
        ...(binding ? { binding, decision: ALLOWED } : {}),
      })
      if (!out.owned) {
        throwIfUnstorable(out.entry)
        return c.json({ status: "replay", request_id: out.entry.requestId, result: out.entry.result })
      }
      return c.json({
        status: "run",
        request_id: out.entry.requestId,
        fence: out.entry.fence,
        lease,
        lease_until: out.entry.leaseUntil,
        lease_ttl: ttl,
        side_effect_boundary: out.entry.sideEffectBoundary,
        authorized_reexec: out.authorizedReexec,
        limits: { max_body_bytes: ctx.limits.maxBodyBytes, max_depth: ctx.limits.maxDepth },
      })
    } catch (e) {
      // The server never sleeps for an agent: another worker holds the call, ask again shortly.
      if (e instanceof LedgerPollTimeoutError)
        return c.json({ status: "poll", retry_after: ctx.pollInterval })
      if (e instanceof LedgerHardBlockError || e instanceof LedgerSoftBlockError)
        return c.json({ status: "blocked", error: { code: e.code, message: e.message } })
      // The claim refuses a malformed request id as an invalid option: here that option is the caller's body.
      if (e instanceof LedgerConfigError && e.code === "invalid_option")
        throw new HttpError("invalid_body", e.message)
      throw e
    }
  })

  api.post("/v1/calls/:id/boundary", async (c) => {
    const { ledger } = ctx.need(c, "agent")
    const id = ctx.id(c)
    const b = await ctx.body(c, BoundaryBody)
    if (!b.boundary && !b.external_operation_ref)
      throw new HttpError("invalid_body", "send boundary, external_operation_ref, or both")
    const guard = { fence: b.fence, owner: ownerForLease(b.lease) }
    let row: LedgerEntry | null = null
    if (b.boundary) row = await ledger.advanceBoundary(id, b.boundary, guard)
    if (b.external_operation_ref)
      row = await ledger.attachExternalOperationRef(id, b.external_operation_ref, guard)
    return c.json(callState(row as LedgerEntry))
  })

  api.post("/v1/calls/:id/complete", async (c) => {
    const { ledger } = ctx.need(c, "agent")
    const id = ctx.id(c)
    const b = await ctx.body(c, CompleteBody, "result")
    const forged = "result" in b ? forgedReleaseAt(b.result, "result") : null
    if (forged) throw new HttpError("invalid_body", forged)
    const guard = { fence: b.fence, owner: ownerForLease(b.lease) }
    const row =
      "unstorable" in b
        ? await ledger.completeUnstorable(id, b.unstorable.limit, b.unstorable.message, guard)
        : await ledger.complete(id, b.result, guard)
    return c.json({ ...callState(row), result_stored: row.error === null })
  })

  api.post("/v1/calls/:id/fail", async (c) => {
    const { ledger } = ctx.need(c, "agent")
    const id = ctx.id(c)
    const b = await ctx.body(c, FailBody)
    const guard = { fence: b.fence, owner: ownerForLease(b.lease) }
    // The stored boundary decides (fail() classifies by the row it writes over, in this ledger's queue for the row);
    // the caller can only raise it, never talk an ambiguous row down to FAILED_BEFORE_EFFECT.
    const row = await ledger.fail(id, b.error, { ...guard, ...(b.boundary && { boundary: b.boundary }) })
    return c.json(callState(row))
  })

  api.post("/v1/calls/:id/renew", async (c) => {
    const { ledger } = ctx.need(c, "agent")
    const id = ctx.id(c)
    const b = await ctx.body(c, RenewBody)
    const ttl = Math.min(b.lease_ttl ?? ctx.defaultLeaseTtl, ctx.maxLeaseTtl)
    const row = await ledger.renewLease(id, { fence: b.fence, owner: ownerForLease(b.lease), leaseTtl: ttl })
    // The lease granted, maxLeaseTtl capping the one asked for: the client reckons its lease with it.
    return c.json({ ...callState(row), lease_ttl: ttl })
  })
}
