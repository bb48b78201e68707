// Message shapes of the Python original, so operators and log searches see the same text from both workers.
import { clip, pyStrRepr } from "../../repr.ts"
import type { ToolTransitionBinding } from "../model/binding.ts"
import { pythonFloatRepr } from "../model/canonical.ts"
import type { LedgerEntry } from "../model/entry.ts"
import type { TerminalOutcome } from "../model/enums.ts"
import { providerKeyValidity } from "./gates.ts"

// Ids and refs are quoted clipped: a requestIdFrom key is the model's argument, and 1 MB of it made every message
// 1 MB. The Python original quotes them whole: only those over 300 characters read otherwise.
const pyRepr = (s: string): string => pyStrRepr(clip(s))
const float = (x: number): string => (Number.isInteger(x) ? `${x}.0` : pythonFloatRepr(x))

export function hardBlockMessage(
  entry: LedgerEntry,
  resolved: TerminalOutcome,
  binding: ToolTransitionBinding | null,
  now: number,
): string {
  let msg = `Side-effecting tool '${entry.tool}' request '${clip(entry.requestId)}' is ${resolved} with boundary ${entry.sideEffectBoundary}`
  if (resolved === "EXPIRED" && entry.leaseUntil !== null) msg += `, lease_until=${float(entry.leaseUntil)}`
  const ttl = binding?.providerIdempotencyKeyTtl ?? null
  if (binding && ttl !== null && providerKeyValidity(entry, binding, now) === "EXPIRED") {
    msg += `, provider_idempotency_key_ttl=${float(ttl)}`
    const ref = entry.providerKeyFirstAttemptAt ?? entry.startedAt
    if (ref) msg += `, age=${(now - ref).toFixed(1)}s`
  }
  if (entry.externalOperationRef) msg += ` (external_operation_ref=${pyRepr(entry.externalOperationRef)})`
  return `${msg}; manual reconciliation required`
}

export function driftMessage(
  priorRequestId: string,
  incomingRequestId: string,
  priorTool: string,
  tool: string,
): string {
  return (
    `Args drift / identity conflict for tool '${tool}': dispatch ticket already recorded with a different tool, ` +
    `scope, or arguments (prior request_id=${pyRepr(priorRequestId)}, incoming request_id=${pyRepr(incomingRequestId)}, ` +
    `prior tool=${pyRepr(priorTool)}). Mint a new request_id / tool_call_id for a genuinely new intent.`
  )
}

export function identityConflictMessage(
  dispatchId: string,
  priorRequestId: string,
  incomingRequestId: string,
  tool: string,
): string {
  return (
    `Identity conflict for tool '${tool}': tool_call_id ${pyRepr(dispatchId)} holds these arguments under another ` +
    `key (prior request_id=${pyRepr(priorRequestId)}, incoming request_id=${pyRepr(incomingRequestId)}); nothing ` +
    "ran. Settle the prior transition or mint a new tool_call_id."
  )
}

/** `"{n}s ago"`, `"{n}m ago"`, `"{n}h ago"`. */
export function ageString(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  return `${Math.floor(s / 3600)}h ago`
}

/** `"now"`, `"{n}s"`, `"{n}m"`, `"{n}h"`. */
export function remainingString(seconds: number): string {
  const s = Math.ceil(seconds)
  if (s <= 0) return "now"
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.ceil(s / 60)}m`
  return `${Math.ceil(s / 3600)}h`
}
