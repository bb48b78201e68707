// What `POST /v1/calls` may answer, checked before the client acts on it. A tool body runs only on a well-formed
// `run` answer: a proxy's `{}`, a half-written answer or another call's replay must never start an effect.
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
import type { JsonValue } from "../core/ledger/model/canonical.ts"
import type { SideEffectBoundary } from "../core/ledger/model/enums.ts"
import { serverText } from "../core/storage/request-timeout.ts"

export interface RunAnswer {
  readonly status: "run"
  readonly request_id: string
  readonly fence: number
  readonly lease: string
  readonly lease_ttl: number
  readonly side_effect_boundary: SideEffectBoundary
  readonly limits: { readonly max_body_bytes: number; readonly max_depth: number }
}
export type BeginAnswer =
  | RunAnswer
  | { readonly status: "replay"; readonly request_id: string; readonly result: JsonValue }
  | { readonly status: "poll"; readonly retry_after: number }
  | { readonly status: "blocked"; readonly error: { readonly code: string; readonly message: string } }

const BOUNDARIES: readonly string[] = ["not_crossed", "maybe_crossed", "crossed"]
/** A server's retry hint is kept within these seconds: a hostile 0 or 1e9 must not spin or stall the agent. */
const MIN_RETRY = 0.01
const MAX_RETRY = 30

/** The lease lengths the server takes back (its `Held` schema): a hostile 10 MB one is not sent on every renewal. */
export const LEASE_MIN_CHARS = 16
export const LEASE_MAX_CHARS = 128

export const positive = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v > 0

function refuse(why: string): never {
  // `why` may quote the answer (its status, its request id): bounded, as any text of the server's.
  throw new LedgerStorageUnavailableError(
    serverText(
      `the ledger API's answer to begin a call is malformed (${why}); nothing was run: check the API's base URL`,
    ),
  )
}

/**
 * The answer, checked; `requestId` is the id the caller asked for, when it named one, and `leaseTtl` the lease it asked
 * for, when it asked one.
 */
export function checkBeginAnswer(
  raw: unknown,
  requestId: string | undefined,
  leaseTtl = Infinity,
): BeginAnswer {
  if (typeof raw !== "object" || raw === null) refuse("not an object")
  const a = raw as Record<string, unknown>
  if (a.status === "poll") {
    const r = typeof a.retry_after === "number" && a.retry_after >= 0 ? a.retry_after : 0.05
    return { status: "poll", retry_after: Math.min(Math.max(r, MIN_RETRY), MAX_RETRY) }
  }
  if (a.status === "blocked") {
    const e = a.error as { code?: unknown; message?: unknown } | null | undefined
    if (typeof e?.code !== "string" || typeof e.message !== "string") refuse("a block without its error")
    return { status: "blocked", error: { code: e.code, message: e.message } }
  }
  if (a.status !== "run" && a.status !== "replay") refuse(`status ${JSON.stringify(a.status) ?? "missing"}`)
  if (typeof a.request_id !== "string" || (requestId !== undefined && a.request_id !== requestId))
    refuse(`request id ${JSON.stringify(a.request_id)} is not the one asked for`)
  if (a.status === "replay") {
    // The server always sends the result (null for none): a replay without it (a proxy's half answer) resolved
    // undefined as the call's result, and the body never ran.
    if (!("result" in a)) refuse("a replay without its result")
    return { status: "replay", request_id: a.request_id, result: a.result as JsonValue }
  }
  const limits = a.limits as { max_body_bytes?: unknown; max_depth?: unknown } | null | undefined
  if (
    !Number.isSafeInteger(a.fence) ||
    (a.fence as number) < 1 ||
    typeof a.lease !== "string" ||
    a.lease.length < LEASE_MIN_CHARS ||
    a.lease.length > LEASE_MAX_CHARS ||
    !positive(a.lease_ttl) ||
    !BOUNDARIES.includes(a.side_effect_boundary as string) ||
    !positive(limits?.max_body_bytes) ||
    !positive(limits?.max_depth)
  )
    refuse("a run without its fence, lease, lease_ttl, side_effect_boundary or limits")
  return {
    status: "run",
    request_id: a.request_id,
    fence: a.fence as number,
    lease: a.lease,
    // At most the lease asked for, as a renewal's (the server grants min(asked, maxLeaseTtl)): a longer one (a broken
    // or replayed answer) spaced renewals past the server's lapse, and sideEffect() ran beside a redispatch.
    lease_ttl: Math.min(a.lease_ttl, leaseTtl),
    side_effect_boundary: a.side_effect_boundary as SideEffectBoundary,
    limits: { max_body_bytes: limits.max_body_bytes, max_depth: limits.max_depth },
  }
}
