// The request and response shapes of the ledger API. The same schemas validate requests and generate
// /openapi.json, so the published contract cannot drift from what the server accepts.
import * as z from "zod/mini"
import {
  EffectState,
  RetryPermission,
  SideEffectBoundary,
  Spendability,
  TerminalOutcome,
  ToolCapability,
} from "../core/ledger/index.ts"
import { RECEIPT_CURSOR } from "../core/receipts/store.ts"
import { MAX_ERROR_TEXT } from "../core/storage/text.ts"
import { LEASE_MAX_CHARS, LEASE_MIN_CHARS } from "./begin-answer.ts"

const Id = z.string().check(z.minLength(1), z.maxLength(512))
// A call's id goes into its URLs, where "." and ".." are path steps (even as %2E): a call under one could never be
// reported, failed or released.
const CallId = Id.check(
  z.refine((v) => v !== "." && v !== "..", {
    error: 'a call id cannot be "." or "..": URLs treat them as path steps',
  }),
)
const Text = (max: number) => z.string().check(z.maxLength(max))
// Bodies are parsed JSON already (depth-checked), so any value is JSON; z.json() would also emit a recursive
// $defs reference that does not resolve once embedded in an OpenAPI document.
const Json = z.unknown().check(z.meta({ description: "any JSON value" }))

// ---- agent: ledgered calls run on the server --------------------------------------------------------------

export const BindingBody = z.strictObject({
  agent_id: z.string().check(z.minLength(1), z.maxLength(200)),
  policy_version: z.string().check(z.minLength(1), z.maxLength(200)),
  side_effect_class: z.string().check(z.minLength(1), z.maxLength(64)),
  scope_from: z.optional(
    z.strictObject({
      thread_id: z.optional(Text(200)),
      run_id: z.optional(Text(200)),
      node: z.optional(Text(200)),
    }),
  ),
  retry_permission: z.optional(z.enum(RetryPermission)),
  side_effect_boundary_default: z.optional(z.enum(SideEffectBoundary)),
  spendability: z.optional(z.enum(Spendability)),
  capability: z.optional(z.enum(ToolCapability)),
  provider_idempotency_key_param: z.optional(Text(200)),
  provider_idempotency_key_ttl: z.optional(z.number().check(z.positive())),
  request_id_from: z.optional(Text(200)),
})

export const MetaBody = z.strictObject({
  request_id: z.optional(CallId),
  tool_call_id: z.optional(CallId),
  thread_id: z.optional(Text(512)),
  run_id: z.optional(Text(512)),
  node: z.optional(Text(512)),
  state_ref: z.optional(Text(512)),
  decision_id: z.optional(Text(512)),
  parent_request_id: z.optional(Text(512)),
  handoff_id: z.optional(Text(512)),
})

export const BeginCallBody = z.strictObject({
  tool: z.string().check(z.minLength(1), z.maxLength(200)),
  args: z.optional(z.record(z.string(), Json)),
  binding: z.optional(BindingBody),
  meta: z.optional(MetaBody),
  /** Seconds; capped by the server's maxLeaseTtl. */
  lease_ttl: z.optional(z.number().check(z.positive())),
})

const Held = {
  fence: z.int().check(z.gte(1)),
  lease: z.string().check(z.minLength(LEASE_MIN_CHARS), z.maxLength(LEASE_MAX_CHARS)),
}

export const BoundaryBody = z.strictObject({
  ...Held,
  boundary: z.optional(z.enum(["maybe_crossed", "crossed"])),
  external_operation_ref: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
})

export const CompleteBody = z.union([
  z.strictObject({ ...Held, result: Json }),
  z.strictObject({
    ...Held,
    unstorable: z.strictObject({
      limit: z.enum(["not_serializable", "max_depth", "max_row_bytes"]),
      message: z.string().check(z.minLength(1), z.maxLength(1000)),
    }),
  }),
])

export const FailBody = z.strictObject({
  ...Held,
  error: z.string().check(z.maxLength(MAX_ERROR_TEXT)),
  /** The caller may only raise the stored boundary (a clean sideEffect() it did not write yet). */
  boundary: z.optional(z.enum(SideEffectBoundary)),
})

export const RenewBody = z.strictObject({ ...Held, lease_ttl: z.optional(z.number().check(z.positive())) })

const Limits = z.object({ max_body_bytes: z.number(), max_depth: z.number() })
export const BeginCallResponse = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("run"),
    request_id: z.string(),
    fence: z.number(),
    lease: z
      .string()
      .check(z.describe("secret lease credential: present it with the fence on every later call")),
    lease_until: z.nullable(z.number()),
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
  lease_until: z.nullable(z.number()),
  external_operation_ref: z.nullable(z.string()),
})

export const RenewResponse = z.object({ ...CallStateResponse.shape, lease_ttl: z.number() })

// ---- operators and readers ----------------------------------------------------------------------------------

// What an operator says (who, why): blank text says nothing, and the ledger refuses it.
const Said = (max: number) =>
  z.string().check(
    z.maxLength(max),
    z.refine((v) => v.trim() !== "", { error: "must say something (not empty or only spaces)" }),
  )

export const ReleaseBody = z.strictObject({
  verified: z.enum(["completed", "not_executed"]),
  reason: Said(2000),
  by: z.optional(Said(200)),
  /** With `completed` only: what redispatches return. */
  result: z.optional(Json),
  /** Why a lapsed lease's owner cannot act, when no death signal exists (see docs/kill-safety.md). */
  override_death_signal: z.optional(Said(2000)),
  /** The fence the operator saw: refused (409) if another attempt claimed the transition since. */
  expected_fence: z.optional(z.int().check(z.gte(0))),
  /** Release an IN_FLIGHT row on an unbounded lease once its worker is marked dead (a bounded live lease stays refused). */
  force: z.optional(z.boolean()),
})

export const MarkDeadBody = z.strictObject({
  reason: Said(2000),
  by: z.optional(Said(200)),
  override_heartbeat: z.optional(z.boolean()),
  expected_fence: z.optional(z.int().check(z.gte(0))),
})

export const Row = z.looseObject({
  request_id: Id,
  tool: z.string().check(z.maxLength(200)),
  status: z.string().check(z.maxLength(32)),
  // A fence past 2^53 or not a whole number (the string "Infinity" read as Infinity) is one no later write can
  // match: the row could never be written again. Missing in the original's legacy rows (read as 0).
  fence: z.optional(z.int().check(z.gte(0))),
})

const PageLimit = z.optional(z.string().check(z.regex(/^\d{1,4}$/)))

export const TransitionsQuery = z.strictObject({
  outcome: z.optional(z.enum(TerminalOutcome)),
  tool: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  stuck: z.optional(z.enum(["true", "false", "1", "0"])),
  limit: PageLimit,
  cursor: z.optional(Id),
})

// ---- store (trusted backends) -------------------------------------------------------------------------------

export const PutRowBody = z.strictObject({ row: Row })

export const ClaimRowBody = z.strictObject({
  entry: Row,
  lease_ttl: z.number(),
  /** Ignored: leases run on the server's clock. Accepted so older clients keep working. */
  now: z.optional(z.number()),
  reclaim_fence: z.optional(z.nullable(z.int())),
  dispatch_id: z.optional(Id),
  silent_for: z.optional(z.number().check(z.nonnegative())),
})

export const TransitionRowBody = z.strictObject({
  next: Row,
  expect: z.strictObject({
    // null too: a damaged or legacy row may store it, and its field repair expects the value stored (a 400 here was
    // read as an outage on every call of that row).
    outcomes: z.array(z.nullable(z.enum(TerminalOutcome))).check(z.minLength(1), z.maxLength(16)),
    owner: z.optional(z.nullable(z.string().check(z.maxLength(512)))),
    fence: z.int(),
    effect_phase: z.optional(z.enum(EffectState)),
    side_effect_boundary: z.optional(z.nullable(z.enum(SideEffectBoundary))),
    lease_held_at: z.optional(z.number()),
    silent_for: z.optional(z.number().check(z.nonnegative())),
  }),
})

export const RowsQuery = z.strictObject({
  limit: PageLimit,
  prefix: z.optional(z.string().check(z.maxLength(512))),
  cursor: z.optional(Id),
})

// ---- audit receipts (reader) --------------------------------------------------------------------------------

export const ReceiptsFilterQuery = z.strictObject({
  agent_id: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  ledger: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
})

export const ReceiptsQuery = z.strictObject({
  ...ReceiptsFilterQuery.shape,
  limit: PageLimit,
  /** A position the previous page returned (the stores hand out canonical decimals). */
  cursor: z.optional(z.string().check(z.regex(RECEIPT_CURSOR))),
  /** `jsonl`: one receipt per line in the exact forms its signature covers, so an export verifies offline. */
  format: z.optional(z.enum(["json", "jsonl"])),
})

export const VerifyReceiptsBody = z.strictObject({
  /** Every receipt must carry a chain link (the default); `false` allows them only before the chains. */
  require_chain: z.optional(z.boolean()),
  /**
   * Another writer appends unchained receipts to this store: they may follow chained ones (a deletion among them
   * goes unseen).
   */
  allow_unchained: z.optional(z.boolean()),
  /** Chain heads kept elsewhere: a chain whose tail is not this head was truncated. */
  heads: z.optional(
    z.record(
      z.string().check(z.maxLength(512)),
      z.strictObject({ seq: z.int().check(z.gte(0)), digest: z.string().check(z.maxLength(128)) }),
    ),
  ),
})

export const ErrorResponse = z.object({
  error: z.object({
    code: z.string().check(z.regex(/^[a-z][a-z0-9_]*$/)),
    message: z.string().check(z.minLength(1)),
  }),
})
