// Rows exactly as the Python original writes them (reference §2.1): the conformance suite stores each one (raw
// when the factory can, else through the row codec) and checks the adapter reads and claims it as the original would.

/** "Now" for the Python rows: after their claims, before their leases end (except where a case says so). */
export const PY_NOW = 1_780_000_010.5

/** A row as the Python original writes it (`LedgerEntry.to_dict()`, schema 2), as in the repository's test/fixtures/python-ledger.json. */
const PY_V2: Record<string, unknown> = {
  request_id: "sp:completed",
  tool: "send_payment",
  args: [],
  kwargs: { amount: 100, recipient: "acct_\u00e9", tool_call_id: "call_py_1" },
  status: "completed",
  terminal_outcome: "COMPLETED",
  fence: 1,
  result: { id: "pi_1", amount: 100.5, tiny: 1e-7 },
  error: null,
  started_at: 1780000000.125,
  finished_at: 1780000001.5,
  lease_until: 1780003600.125,
  owner: "host-a:4242",
  idempotency_key: "sp:completed",
  receipt_ref: null,
  side_effect_boundary: "crossed",
  external_operation_ref: "pi_1",
  provider_idempotency_key: null,
  provider_key_first_attempt_at: null,
  last_heartbeat_at: 1780000000.125,
  worker_dead_asserted_by: null,
  worker_dead_asserted_at: null,
  operator_resolution: null,
  resolved_by: null,
  resolution_reason: null,
  resolved_at: null,
  released_from_outcome: null,
  decision_id: null,
  state_ref: null,
  decision: {
    allowed: true,
    verdicts: [{ name: "amount_cap", allowed: true, reason: null }],
    denied_reasons: [],
  },
  effect_phase: "COMMITTED",
  effect_protocol_required: true,
  effect_id: "sp:completed",
  schema_version: 2,
  parent_request_id: null,
  handoff_id: null,
}

/** A schema-1 row (before terminal outcomes and fences): only what the first versions wrote. */
const PY_LEGACY: Record<string, unknown> = {
  request_id: "legacy:1",
  tool: "send_payment",
  args: [],
  kwargs: { amount: 100, recipient: "acct_\u00e9", tool_call_id: "call_py_1" },
  status: "completed",
  result: "ok",
  error: null,
  started_at: 1700000000.5,
  finished_at: 1700000001.25,
}

export interface PythonRowCase {
  label: string
  row: Record<string, unknown> & { status: string; result: unknown; terminal_outcome?: string }
  legacy: boolean
  claim: "claimed" | "completed" | "in_flight"
}

const v2 = (terminal: string, status: string, extra: Record<string, unknown> = {}) =>
  ({ ...PY_V2, terminal_outcome: terminal, status, ...extra }) as PythonRowCase["row"]
const legacy = (status: string, extra: Record<string, unknown> = {}) =>
  ({ ...PY_LEGACY, status, ...extra }) as PythonRowCase["row"]

export const PYTHON_ROWS: PythonRowCase[] = [
  { label: "COMPLETED", row: v2("COMPLETED", "completed"), legacy: false, claim: "completed" },
  {
    label: "IN_FLIGHT, lease held",
    row: v2("IN_FLIGHT", "in-flight", { result: null, finished_at: null, effect_phase: "INTENDED" }),
    legacy: false,
    claim: "in_flight",
  },
  {
    label: "IN_FLIGHT, lease lapsed (reads as EXPIRED)",
    row: v2("IN_FLIGHT", "in-flight", { result: null, finished_at: null, lease_until: PY_NOW - 1 }),
    legacy: false,
    claim: "claimed",
  },
  {
    label: "EXPIRED",
    row: v2("EXPIRED", "in-flight", { result: null, lease_until: PY_NOW - 5 }),
    legacy: false,
    claim: "claimed",
  },
  {
    label: "FAILED_BEFORE_EFFECT",
    row: v2("FAILED_BEFORE_EFFECT", "failed", {
      result: null,
      error: "ValueError: bad",
      effect_phase: "ABORTED",
    }),
    legacy: false,
    claim: "claimed",
  },
  {
    label: "FAILED_AFTER_EFFECT",
    row: v2("FAILED_AFTER_EFFECT", "failed", {
      result: null,
      error: "RuntimeError: after",
      effect_phase: "UNKNOWN",
    }),
    legacy: false,
    claim: "claimed",
  },
  {
    label: "BLOCKED",
    row: v2("BLOCKED", "failed", { result: null, error: "blocked" }),
    legacy: false,
    claim: "in_flight",
  },
  {
    label: "UNKNOWN",
    row: v2("UNKNOWN", "failed", {
      result: null,
      error: "TimeoutError: gateway timeout",
      effect_phase: "UNKNOWN",
    }),
    legacy: false,
    claim: "in_flight",
  },
  // Schema 1: a missing terminal_outcome reads as IN_FLIGHT with no lease, so no store ever claims such a row;
  // the ledger's repair gate then settles it from `status` (the replay test below).
  { label: "legacy completed", row: legacy("completed"), legacy: true, claim: "in_flight" },
  {
    label: "legacy failed",
    row: legacy("failed", { result: null, error: "ValueError: x" }),
    legacy: true,
    claim: "in_flight",
  },
  {
    label: "legacy in-flight, lease lapsed",
    row: legacy("in-flight", { result: null, finished_at: null, lease_until: PY_NOW - 1 }),
    legacy: true,
    claim: "claimed",
  },
]

/** `json.dumps(row)` as Python writes it, non-ASCII escaped (its spacing does not change what parses). */
export function pythonJson(row: Record<string, unknown>): string {
  return JSON.stringify(row).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  )
}
