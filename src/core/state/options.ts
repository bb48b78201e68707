// StateFlush's options arrive from JavaScript callers and config files, unchecked by the compiler. A wrong kind is
// refused here, naming the option, before anything runs: left to the run it surfaced as a TypeError from deep
// inside (`on is not iterable`, AbortSignal.any's), and a store without load/save would pass for an outage.
// Null is "unset", as `??` has always read each option.
import { InvalidOptionError } from "../errors.ts"
import { isObject } from "../is-object.ts"
import { safeString } from "../repr.ts"
import type { FlushTrigger, StateFlushStore } from "./snapshot.ts"

/** What `v` is, for a message: null and lists named as such. */
export const kindOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v)

/** `v` (options or arguments) as an object to read; undefined and null are none. */
export function optionsObject<T extends object>(v: T | null | undefined, who: string): Partial<T> {
  if (v === undefined || v === null) return {}
  if (!isObject(v)) throw new InvalidOptionError(`${who}: pass an options object, got ${kindOf(v)}`)
  return v
}

export function checkStore(v: unknown): void {
  if (v === undefined || v === null) return
  const s = v as Partial<Record<keyof StateFlushStore, unknown>>
  if (typeof v !== "object" || typeof s.load !== "function" || typeof s.save !== "function")
    throw new InvalidOptionError(`storage: pass a state store with load() and save(), got ${kindOf(v)}`)
}

const TRIGGERS: ReadonlySet<unknown> = new Set<FlushTrigger>(["cancel", "disconnect", "error"])

export function flushTriggers(v: unknown): ReadonlySet<FlushTrigger> {
  if (v === undefined || v === null) return new Set(TRIGGERS as ReadonlySet<FlushTrigger>)
  // An object: a string is iterable too, and "cancel" was read as its letters.
  if (typeof v !== "object" || !(Symbol.iterator in v))
    throw new InvalidOptionError(`flushOn: pass a list of cancel, disconnect or error, got ${kindOf(v)}`)
  const on = [...(v as Iterable<unknown>)]
  for (const t of on)
    if (!TRIGGERS.has(t))
      throw new InvalidOptionError(
        `flushOn entries must be cancel, disconnect or error, got '${safeString(t)}'`,
      )
  return new Set(on as FlushTrigger[])
}

export function checkKind(v: unknown, name: string, type: "boolean" | "function"): void {
  if (v !== undefined && v !== null && typeof v !== type)
    throw new InvalidOptionError(`${name}: pass a ${type}, got ${kindOf(v)}`)
}

// The `aborted` getter checks that its receiver is a real AbortSignal, as AbortSignal.any() needs: a look-alike is
// refused, and one from another realm (an iframe's) accepted, which instanceof alone would refuse.
const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")?.get

/** A signal option: an AbortSignal, or none (undefined, null). */
export function signalOption(v: unknown, name: string): AbortSignal | undefined {
  if (v === undefined || v === null) return undefined
  if (v instanceof AbortSignal) return v
  try {
    if (abortedOf && typeof v === "object") {
      abortedOf.call(v)
      return v as AbortSignal
    }
  } catch {}
  throw new InvalidOptionError(`${name}: pass an AbortSignal (an AbortController's signal), got ${kindOf(v)}`)
}
