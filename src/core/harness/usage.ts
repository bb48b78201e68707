// RunUsage arithmetic: adding sums every counter and merges `details` key by key (pydantic-ai's rule).

import { defineOwn } from "../own.ts"
import { clip, safeString } from "../repr.ts"
import type { RunUsage } from "./types.ts"

export const USAGE_COUNTERS = [
  "requests",
  "tool_calls",
  "input_tokens",
  "output_tokens",
  "cache_write_tokens",
  "cache_read_tokens",
  "input_audio_tokens",
  "cache_audio_read_tokens",
  "output_audio_tokens",
] as const
export type UsageCounter = (typeof USAGE_COUNTERS)[number]

/** A usage being accumulated; `snapshot()` gives the frozen public form. */
export class UsageAccumulator {
  /** Read freely; change only through `add` and `inc`, which keep the cached snapshot right. */
  readonly counts: Record<UsageCounter, number> = {
    requests: 0,
    tool_calls: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_write_tokens: 0,
    cache_read_tokens: 0,
    input_audio_tokens: 0,
    cache_audio_read_tokens: 0,
    output_audio_tokens: 0,
  }
  // No prototype: a reported detail named `constructor` or `__proto__` must not read Object.prototype's members.
  readonly details: Record<string, number> = Object.create(null)
  // Snapshots are frozen objects; a 1,000-task run asks for the same one several times, so it is cached.
  #snapshot: RunUsage | null = null

  add(u: Partial<RunUsage> | null | undefined): void {
    if (!u) return
    this.#snapshot = null
    for (const k of USAGE_COUNTERS) {
      const v = u[k]
      if (typeof v === "number" && Number.isFinite(v)) this.counts[k] += v
    }
    if (u.details)
      for (const [k, v] of Object.entries(u.details)) this.details[k] = (this.details[k] ?? 0) + v
  }

  get totalTokens(): number {
    return this.counts.input_tokens + this.counts.output_tokens
  }

  inc(counter: UsageCounter, n = 1): void {
    this.counts[counter] += n
    this.#snapshot = null
  }

  snapshot(): RunUsage {
    if (this.#snapshot) return this.#snapshot
    this.#snapshot = Object.freeze({
      ...this.counts,
      details: Object.freeze({ ...this.details }),
      total_tokens: this.totalTokens,
    })
    return this.#snapshot
  }
}

export function emptyUsage(): RunUsage {
  return new UsageAccumulator().snapshot()
}

export function addUsage(a: Partial<RunUsage>, b: Partial<RunUsage>): RunUsage {
  const acc = new UsageAccumulator()
  acc.add(a)
  acc.add(b)
  return acc.snapshot()
}

/** A host-supplied usage read once, field by field, so what is validated is what is counted (getters, proxies). */
export function readUsage(u: unknown): unknown {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return u
  const rec = u as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const k of USAGE_COUNTERS) out[k] = rec[k]
  const d = rec.details
  out.details = typeof d === "object" && d !== null && !Array.isArray(d) ? { ...d } : d
  return out
}

/** Problems with a host-supplied usage: counters must be non-negative integers. Empty when valid. */
export function usageProblems(u: unknown): string[] {
  if (u === undefined || u === null) return []
  if (typeof u !== "object" || Array.isArray(u)) return ["initial_usage must be an object"]
  const rec = u as Record<string, unknown>
  const out: string[] = []
  for (const k of USAGE_COUNTERS) {
    const v = rec[k]
    if (v === undefined) continue
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
      out.push(`initial_usage.${k} must be a non-negative integer, got ${clip(safeString(v))}`)
  }
  if (rec["details"] !== undefined) {
    const d = rec["details"]
    if (typeof d !== "object" || d === null || Array.isArray(d))
      out.push("initial_usage.details must be an object")
    else
      for (const [k, v] of Object.entries(d))
        if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
          out.push(`initial_usage.details.${clip(k)} must be a non-negative integer`)
  }
  return out
}

const RESPONSE_COUNTERS = [
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_write_tokens",
  "input_audio_tokens",
  "output_audio_tokens",
  "cache_audio_read_tokens",
] as const satisfies readonly UsageCounter[]

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0

/**
 * The usage a model client reported, with only what it may report: token counters that are finite and >= 0. A
 * negative or NaN count from a buggy or hostile client would otherwise be subtracted from the run's shared budget
 * (refunding it) or reach the samples; such a count is treated as unreported. `requests` and `tool_calls` are
 * counted by the harness, never taken from the client.
 */
export function reportedUsage(u: unknown): Partial<RunUsage> | null {
  if (typeof u !== "object" || u === null) return null
  const rec = u as Record<string, unknown>
  const out: Partial<Record<UsageCounter, number>> & { details?: Record<string, number> } = {}
  for (const k of RESPONSE_COUNTERS) if (isCount(rec[k])) out[k] = rec[k]
  const d = rec.details
  if (typeof d === "object" && d !== null && !Array.isArray(d)) {
    const details: Record<string, number> = {}
    for (const [k, v] of Object.entries(d)) if (isCount(v)) defineOwn(details, k, v)
    out.details = details
  }
  return out
}
