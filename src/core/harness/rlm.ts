// Recursive sub-queries (RLM) as tools the model calls. Each sub-query is a fresh child agent at depth + 1 on the
// run's one budget, request cap and measurements. Running model-written code is a host `Sandbox` concern: there is
// no eval here.

import { InvalidOptionError } from "../errors.ts"
import { optionsObject } from "../options.ts"
import { safeString } from "../repr.ts"
import { BudgetExceededError } from "./errors.ts"
import { Semaphore } from "./semaphore.ts"
import {
  type HarnessTool,
  PASSES_REFUSALS,
  type SubQuery,
  type ToolContext,
  ToolReportedError,
} from "./tools.ts"

export interface RlmToolOptions {
  readonly name?: string
  readonly description?: string
}

function readQuery(args: Record<string, unknown>): SubQuery {
  const prompt = args.prompt
  const context = args.context
  if (typeof prompt !== "string" || prompt.trim() === "")
    throw new ToolReportedError("rlm_query needs a non-empty string `prompt`.")
  if (context !== undefined && typeof context !== "string")
    throw new ToolReportedError("rlm_query `context` must be a string when given.")
  return context === undefined ? { prompt } : { prompt, context }
}

/**
 * `rlm_query(prompt, context?)`: answers a sub-question with a child agent. Past `max_depth` the model gets the
 * tool error "recursion depth exceeded (max N)"; the run goes on.
 */
export function rlmQueryTool(opts?: RlmToolOptions | null): HarnessTool {
  const options = optionsObject(opts, "rlmQueryTool")
  return {
    name: options.name ?? "rlm_query",
    description:
      options.description ??
      "Ask a sub-question about a piece of context; a fresh model run answers it and returns its final text.",
    parameters: {
      type: "object",
      properties: { prompt: { type: "string" }, context: { type: "string" } },
      required: ["prompt"],
      additionalProperties: false,
    },
    execute: (args, ctx: ToolContext) => ctx.spawn(readQuery(args)),
  }
}

/** One item of a parallel fan-out: the answer, or the error in its place (never a throw). */
export type SubQueryOutcome =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly error: string }

/**
 * `rlm_parallel(queries)`: runs several sub-queries and returns one outcome per query, in input order, with an
 * error object where one failed. Fan-out is bounded: at most `max_concurrent_requests` sub-queries run at once
 * (`maxFanOut` can lower it, never raise it), so a 1,000-item list never becomes a 1,000-way gather.
 */
export interface RlmParallelToolOptions extends RlmToolOptions {
  /** At most this many sub-queries at once (a whole number >= 1); never more than the run's request cap. */
  readonly maxFanOut?: number
}

export function rlmParallelTool(opts?: RlmParallelToolOptions | null): HarnessTool {
  const options = optionsObject(opts, "rlmParallelTool")
  const { maxFanOut } = options
  // Checked here, not at the first call: a fan-out of 0 would wait forever for a slot that never frees.
  if (maxFanOut !== undefined && (!Number.isSafeInteger(maxFanOut) || maxFanOut < 1))
    throw new InvalidOptionError(
      `maxFanOut must be a whole number >= 1, got ${String(maxFanOut)}. Leave it out to follow max_concurrent_requests.`,
    )
  const tool: HarnessTool = {
    name: options.name ?? "rlm_parallel",
    description:
      options.description ??
      "Ask several independent sub-questions at once; returns [{ok, value} | {ok: false, error}] in input order.",
    parameters: {
      type: "object",
      properties: {
        queries: {
          type: "array",
          items: {
            type: "object",
            properties: { prompt: { type: "string" }, context: { type: "string" } },
            required: ["prompt"],
          },
        },
      },
      required: ["queries"],
    },
    async execute(args, ctx: ToolContext): Promise<SubQueryOutcome[]> {
      const queries = args.queries
      if (!Array.isArray(queries)) throw new ToolReportedError("rlm_parallel needs an array `queries`.")
      // A sub-query holds no permit while its tools run, so a wider fan-out than the request cap would have more
      // sub-queries under way at once than the run allows requests.
      const gate = new Semaphore(Math.min(maxFanOut ?? Number.POSITIVE_INFINITY, ctx.max_concurrent_requests))
      let stop: unknown = null
      let halt: (e: unknown) => void = () => {}
      // A budget stop or cancellation ends the tool at once, not after every sibling: its throw aborts the batch,
      // which cancels the sub-queries still running instead of letting them pay for requests.
      const halted = new Promise<never>((_, reject) => {
        halt = reject
      })
      const outcomes = Promise.all(
        queries.map(async (q): Promise<SubQueryOutcome> => {
          let release: (() => void) | null = null
          try {
            release = await gate.acquire(ctx.signal)
            if (stop !== null) throw stop
            const value = await ctx.spawn(readQuery((q ?? {}) as Record<string, unknown>))
            return { ok: true, value }
          } catch (e) {
            // Budget stops and cancellation stop the run as they would in a task; any other failure is a value.
            if (ctx.signal.aborted || e instanceof BudgetExceededError) {
              stop ??= ctx.signal.aborted ? ctx.signal.reason : e
              halt(stop)
            }
            return { ok: false, error: e instanceof Error ? e.message : safeString(e) }
          } finally {
            release?.()
          }
        }),
      )
      return await Promise.race([outcomes, halted])
    },
  }
  PASSES_REFUSALS.add(tool.execute)
  return tool
}
