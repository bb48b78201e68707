// StateFlush's own options, checked before anything runs (the shared checks are in ../options.ts): a flushOn of 5
// threw `on is not iterable` from deep inside, and a store without load/save would pass for an outage.
import { InvalidOptionError } from "../errors.ts"
import { kindOf } from "../options.ts"
import { safeString } from "../repr.ts"
import type { FlushTrigger, StateFlushStore } from "./snapshot.ts"

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
