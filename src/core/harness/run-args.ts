// runPlan's deps and options come from JavaScript callers and config files, unchecked by the compiler. A wrong kind
// is refused here, before any event and any request: left to the run, a signal without addEventListener threw after
// `run_started` (no `run_finished` followed), and a numeric model_name failed its task after the request was sent
// and counted. Null is "unset", as `??` reads each field.
import { InvalidOptionError } from "../errors.ts"
import { checkKind, kindOf, optionsObject, signalOption } from "../options.ts"
import { clip, safeString } from "../repr.ts"
import type { RunEvent } from "./events.ts"
import type { HarnessTool } from "./tools.ts"

export const DEFAULT_MAX_REQUEST_SAMPLES = 256
export const DEFAULT_DRAIN_TIMEOUT_SECONDS = 30

// What is read here of driver.ts's RunDeps (declared there, which imports this module).
interface DepsRead {
  readonly model_name?: unknown
  readonly tools?: unknown
  readonly instructions?: unknown
  readonly max_request_samples?: number
  readonly rlm?: { readonly max_depth?: number; readonly max_turns?: number }
}

export interface RunOptions {
  readonly signal?: AbortSignal
  /**
   * Called synchronously in emission order. A sink that throws, or returns a promise that rejects before the run
   * settles, is counted in `sink_errors`; the run goes on.
   */
  readonly onEvent?: (event: RunEvent) => void
  /** The driver run id; pass the crashed run's id to resume a durable run. Default `run:<32 hex>`. */
  readonly run_id?: string
  /** Used when the budget sets no deadline. */
  readonly deadline_seconds?: number
  /** How long a stopping run waits for tasks to settle. Default 30. */
  readonly drain_timeout_seconds?: number
  /** Monotonic milliseconds. Default `performance.now()`. */
  readonly now?: () => number
}

/** What the driver reads from `runPlan`'s deps and options, checked. */
export interface RunArgs {
  readonly onEvent: RunOptions["onEvent"]
  readonly deadlineSeconds: number | undefined
  readonly signal: AbortSignal | undefined
  readonly modelName: string
  /** The caller's run id, undefined when the run mints its own (and so has no durable rows to resume). */
  readonly runId: string | undefined
  readonly maxSamples: number
  readonly drainMs: number
  readonly rlm: { readonly max_depth: number; readonly max_turns: number }
  readonly now: () => number
}

/** An id option: a non-empty string, or unset (undefined, null). */
export function idOption(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== "string" || v === "")
    throw new InvalidOptionError(
      `${name}: pass a non-empty string, got ${v === "" ? "an empty one" : kindOf(v)}`,
    )
  return v
}

/**
 * `tools` (or what its function returned for a task): a list of tools, each with a string name no other has and an
 * execute function. Left to the run, another kind failed the task with a bare TypeError after `task_started`, and
 * of two tools with one name the model could only ever call the last.
 */
export function toolList(v: unknown): readonly HarnessTool[] {
  if (!Array.isArray(v))
    throw new InvalidOptionError(`tools: pass a list of tools or a function, got ${kindOf(v)}`)
  const names = new Set<unknown>()
  for (const t of v)
    if (
      typeof t?.name !== "string" ||
      typeof t.execute !== "function" ||
      names.size === names.add(t.name).size
    )
      throw new InvalidOptionError(
        `tools: each tool needs a string name no other tool has and an execute function, got ${typeof t?.name === "string" ? `'${clip(t.name)}'` : kindOf(t)}`,
      )
  return v
}

/** Checks `runPlan`'s deps and options; throws `InvalidOptionError` naming the first wrong one. */
export function readRunArgs(deps: unknown, options: unknown): RunArgs {
  const model = (deps as { readonly model?: { readonly request?: unknown } | null } | null | undefined)?.model
  const hasDeps = typeof deps === "object" && deps !== null
  if (!hasDeps || typeof model?.request !== "function")
    throw new InvalidOptionError(
      `runPlan needs deps with a model client (an object with request()), got ${hasDeps ? `a model that is ${kindOf(model)}` : kindOf(deps)}`,
    )
  const d = deps as DepsRead
  const o = optionsObject(options as RunOptions | null | undefined, "runPlan options")
  const modelName = d.model_name ?? "unknown:model"
  if (typeof modelName !== "string")
    throw new InvalidOptionError(`model_name: pass a "provider:model" string, got ${kindOf(modelName)}`)
  const runId = idOption(o.run_id, "run_id")
  const tools = d.tools ?? undefined
  if (typeof tools !== "function" && tools !== undefined) toolList(tools)
  const instructions = d.instructions ?? ""
  if (typeof instructions !== "string" && typeof instructions !== "function")
    throw new InvalidOptionError(`instructions: pass a string or a function, got ${kindOf(instructions)}`)
  checkKind(o.onEvent, "onEvent", "function")
  checkKind(o.now, "now", "function")
  const maxSamples = d.max_request_samples ?? DEFAULT_MAX_REQUEST_SAMPLES
  if (!Number.isSafeInteger(maxSamples) || maxSamples < 0)
    throw new InvalidOptionError(
      `max_request_samples must be an integer >= 0, got ${clip(safeString(maxSamples))}. Pass e.g. { max_request_samples: 256 }.`,
    )
  const drainSeconds = o.drain_timeout_seconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS
  if (typeof drainSeconds !== "number" || !(drainSeconds > 0) || !Number.isFinite(drainSeconds))
    throw new InvalidOptionError(
      `drain_timeout_seconds must be a finite number > 0, got ${clip(safeString(drainSeconds))}. Pass e.g. { drain_timeout_seconds: 30 }.`,
    )
  const rlm = { max_depth: d.rlm?.max_depth ?? 3, max_turns: d.rlm?.max_turns ?? 5 }
  // A NaN (a number read from an unset environment variable) or fractional cap compares false against every depth
  // and turn, which lifted the limit instead of applying it.
  if (
    !Number.isSafeInteger(rlm.max_depth) ||
    rlm.max_depth < 0 ||
    !Number.isSafeInteger(rlm.max_turns) ||
    rlm.max_turns < 1
  )
    throw new InvalidOptionError(
      `rlm needs an integer max_depth >= 0 and max_turns >= 1, got ${clip(safeString(rlm.max_depth))} and ${clip(safeString(rlm.max_turns))}`,
    )
  return {
    onEvent: o.onEvent ?? undefined,
    deadlineSeconds: o.deadline_seconds ?? undefined,
    signal: signalOption(o.signal, "signal"),
    modelName,
    runId,
    maxSamples,
    drainMs: drainSeconds * 1000,
    rlm,
    now: o.now ?? (() => performance.now()),
  }
}
