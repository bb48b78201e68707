// Options arrive from JavaScript callers and config files, unchecked by the compiler: a wrong kind is refused here,
// naming the option, before anything runs (left to the code that reads it, it surfaced as a TypeError from deep
// inside). Null is "unset", as `??` reads each option. Shared by the state flush and the harness.
import { InvalidOptionError } from "./errors.ts"
import { isObject } from "./is-object.ts"

/** What `v` is, for a message: null and lists named as such. */
export const kindOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v)

/** `v` (options or arguments) as an object to read; undefined and null are none. */
export function optionsObject<T extends object>(v: T | null | undefined, who: string): Partial<T> {
  if (v === undefined || v === null) return {}
  if (!isObject(v)) throw new InvalidOptionError(`${who}: pass an options object, got ${kindOf(v)}`)
  return v
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
