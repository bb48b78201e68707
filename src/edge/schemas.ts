// The request and response shapes of the ledger API. The same schemas validate requests and generate
// /openapi.json, so the published contract cannot drift from what the server accepts.
import * as z from "zod"
import {
  EffectState,
  RetryPermission,
  SideEffectBoundary,
  Spendability,
  TerminalOutcome,
  ToolCapability,
} from "../core/ledger/index.ts"

const Id = z.string().min(1).max(512)
const Text = (max: number) => z.string().max(max)
// Bodies are parsed JSON already (depth-checked), so any value is JSON; z.json() would also emit a recursive
// $defs reference that does not resolve once embedded in an OpenAPI document.
const Json = z.unknown().meta({ description: "any JSON value" })

// ---- agent: ledgered calls run on the server --------------------------------------------------------------

export const BindingBody = z.strictObject({
  agent_id: z.string().min(1).max(200),
  policy_version: z.string().min(1).max(200),
  side_effect_class: z.string().min(1).max(64),
  scope_from: z
    .strictObject({
      thread_id: Text(200).optional(),
      run_id: Text(200).optional(),
      node: Text(200).optional(),
    })
    .optional(),
  retry_permission: z.enum(RetryPermission).optional(),
  side_effect_boundary_default: z.enum(SideEffectBoundary).optional(),
  spendability: z.enum(Spendability).optional(),
  capability: z.enum(ToolCapability).optional(),
  provider_idempotency_key_param: Text(200).optional(),
  provider_idempotency_key_ttl: z.number().positive().finite().optional(),
  request_id_from: Text(200).optional(),
})

export const MetaBody = z.strictObject({
  request_id: Id.optional(),
  tool_call_id: Id.optional(),
  thread_id: Text(512).optional(),
  run_id: Text(512).optional(),
  node: Text(512).optional(),
  state_ref: Text(512).optional(),
  decision_id: Text(512).optional(),
  parent_request_id: Text(512).optional(),
  handoff_id: Text(512).optional(),
})

export const BeginCallBody = z.strictObject({
  tool: z.string().min(1).max(200),
  args: z.record(z.string(), Json).optional(),
  binding: BindingBody.optional(),
  meta: MetaBody.optional(),
  /** Seconds; capped by the server's maxLeaseTtl. */
  lease_ttl: z.number().positive().finite().optional(),
})

const Held = { fence: z.number().int().min(1), lease: z.string().min(16).max(128) }

export const BoundaryBody = z.strictObject({
  ...Held,
  boundary: z.enum(["maybe_crossed", "crossed"]).optional(),
  external_operation_ref: z.string().min(1).max(512).optional(),
})

export const CompleteBody = z.union([
  z.strictObject({ ...Held, result: Json }),
  z.strictObject({
    ...Held,
    unstorable: z.strictObject({
      limit: z.enum(["not_serializable", "max_depth", "max_row_bytes"]),
      message: z.string().min(1).max(1000),
    }),
  }),
])

export const FailBody = z.strictObject({
  ...Held,
  error: z.string().max(4096),
  /** The caller may only raise the stored boundary (a clean sideEffect() it did not write yet). */
  boundary: z.enum(SideEffectBoundary).optional(),
})

export const RenewBody = z.strictObject({ ...Held, lease_ttl: z.number().positive().finite().optional() })

const Limits = z.object({ max_body_bytes: z.number(), max_depth: z.number() })
export const BeginCallResponse = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("run"),
    request_id: z.string(),
    fence: z.number(),
    lease: z.string().describe("secret lease credential: present it with the fence on every later call"),
    lease_until: z.number().nullable(),
    lease_ttl: z.number(),
    side_effect_boundary: z.enum(SideEffectBoundary),
    authorized_reexec: z.boolean(),
    limits: Limits,
  }),
  z.object({ status: z.literal("replay"), request_id: z.string(), result: Json }),
  z.object({ status: z.literal("poll"), retry_after: z.number() }),
  z.object({ status: z.literal("blocked"), error: z.object({ code: z.string(), message: z.string() }) }),
])

export const CallStateResponse = z.object({
  request_id: z.string(),
  fence: z.number(),
  terminal_outcome: z.enum(TerminalOutcome),
  side_effect_boundary: z.enum(SideEffectBoundary),
  effect_phase: z.enum(EffectState),
  lease_until: z.number().nullable(),
  external_operation_ref: z.string().nullable(),
})

// ---- operators and readers ----------------------------------------------------------------------------------

export const ReleaseBody = z.strictObject({
  verified: z.enum(["completed", "not_executed"]),
  reason: z.string().min(1).max(2000),
  by: z.string().min(1).max(200).optional(),
  result: Json.optional(),
  /** Why a lapsed lease's owner cannot act, when no death signal exists (see docs/kill-safety.md). */
  override_death_signal: z.string().min(1).max(2000).optional(),
  /** The fence the operator saw: refused (409) if another attempt claimed the transition since. */
  expected_fence: z.number().int().min(0).optional(),
})

export const MarkDeadBody = z.strictObject({
  reason: z.string().min(1).max(2000),
  by: z.string().min(1).max(200).optional(),
  override_heartbeat: z.boolean().optional(),
  expected_fence: z.number().int().min(0).optional(),
})

export const Row = z.looseObject({ request_id: Id, tool: z.string().max(200), status: z.string().max(32) })

const PageLimit = z
  .string()
  .regex(/^\d{1,4}$/)
  .optional()

export const TransitionsQuery = z.strictObject({
  outcome: z.enum(TerminalOutcome).optional(),
  tool: z.string().min(1).max(200).optional(),
  stuck: z.enum(["true", "false", "1", "0"]).optional(),
  limit: PageLimit,
  cursor: Id.optional(),
})

// ---- store (trusted backends) -------------------------------------------------------------------------------

export const PutRowBody = z.strictObject({ row: Row })

export const ClaimRowBody = z.strictObject({
  entry: Row,
  lease_ttl: z.number().finite(),
  /** Ignored: leases run on the server's clock. Accepted so older clients keep working. */
  now: z.number().finite().optional(),
  reclaim_fence: z.number().int().nullable().optional(),
  dispatch_id: Id.optional(),
})

export const TransitionRowBody = z.strictObject({
  next: Row,
  expect: z.strictObject({
    outcomes: z.array(z.enum(TerminalOutcome)).min(1).max(16),
    owner: z.string().max(512).nullable().optional(),
    fence: z.number().int(),
    effect_phase: z.enum(EffectState).optional(),
    lease_held_at: z.number().finite().optional(),
  }),
})

export const RowsQuery = z.strictObject({
  limit: PageLimit,
  prefix: z.string().max(512).optional(),
  cursor: Id.optional(),
})

// ---- audit receipts (reader) --------------------------------------------------------------------------------

export const ReceiptsFilterQuery = z.strictObject({
  agent_id: z.string().min(1).max(200).optional(),
  ledger: z.string().min(1).max(512).optional(),
})

export const ReceiptsQuery = z.strictObject({
  ...ReceiptsFilterQuery.shape,
  limit: PageLimit,
  /** A position the previous page returned (the stores hand out canonical decimals). */
  cursor: z
    .string()
    .regex(/^(0|[1-9]\d{0,14})$/)
    .optional(),
})

export const VerifyReceiptsBody = z.strictObject({
  /** Every receipt must carry a chain link. */
  require_chain: z.boolean().optional(),
  /** Chain heads kept elsewhere: a chain whose tail is not this head was truncated. */
  heads: z
    .record(
      z.string().max(512),
      z.strictObject({ seq: z.number().int().min(0), digest: z.string().max(128) }),
    )
    .optional(),
})

export const ErrorResponse = z.object({
  error: z.object({ code: z.string().regex(/^[a-z][a-z0-9_]*$/), message: z.string().min(1) }),
})
