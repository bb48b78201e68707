// Vercel AI SDK glue. Only types are imported from `ai`: this entry never loads the framework at run time, the
// caller's `tool()` objects are wrapped as plain objects.
import type { ModelMessage, Tool, ToolExecutionOptions } from "ai"
import type { CallMeta } from "../core/ledger/index.ts"
import { type BoundarySchema, isStandardSchema, type StandardSchemaV1 } from "../core/tools/index.ts"
import { type HistoryGuard, MessageValidator, type RepairReport } from "../core/transcript/index.ts"
import { compileBounds, type GuardBoundsOptions } from "./bounds.ts"
import { GuardedToolError, hideOutage, outcomeStands } from "./errors.ts"
import { failedCallsOf, runHeld, sideEffectClassOf } from "./failed-calls.ts"
import {
  type BoundaryMode,
  bindTransition,
  checkCallId,
  checkGuard,
  checkToolKeys,
  cleanMeta,
  type GuardContext,
  type GuardLedgerOptions,
  lookupTransition,
  runWithBoundary,
  type ToolLedger,
} from "./ledger-like.ts"

export type { GuardBoundsOptions } from "./bounds.ts"
export { GuardedToolError } from "./errors.ts"
export type { BoundaryMode, GuardContext, GuardLedgerOptions, ToolLedger } from "./ledger-like.ts"

/** Options of {@link guardTool}. */
export interface GuardAiToolOptions extends GuardLedgerOptions {
  /** The tool's name in the ledger: use its key in `tools`. */
  readonly name: string
  /**
   * `bounded()` checks around the ledger. The tool's `inputSchema` (zod, any Standard Schema, or an AI SDK
   * `jsonSchema()` with a validator) is used unless `schema` is given; `false` turns the checks off.
   */
  readonly bounds?: GuardBoundsOptions | false
  /** Default `"whole"`: see {@link BoundaryMode}. */
  readonly boundary?: BoundaryMode
  /** Extra call metadata (thread, run, node...) from the AI SDK's per-call options, e.g. `experimental_context`. */
  readonly meta?: (options: ToolExecutionOptions) => Partial<CallMeta>
}

/** Per-tool options of {@link guardTools} (the name is the tool's key). */
export type GuardAiToolsOptions = Readonly<Record<string, Omit<GuardAiToolOptions, "name">>>

/**
 * Wraps an AI SDK tool so its `execute` runs through the ledger: the `toolCallId` becomes the call's ledger
 * identity, so a redispatched call (same id) replays the recorded result instead of running again, and a
 * call that crashed past its side effect hard-blocks. Arguments are checked by `bounded()` before the claim.
 */
export function guardTool<T extends Tool>(ledger: ToolLedger, tool: T, options: GuardAiToolOptions): T {
  const execute = tool.execute as
    | ((
        input: unknown,
        options: ToolExecutionOptions,
      ) => AsyncIterable<unknown> | PromiseLike<unknown> | unknown)
    | undefined
  if (typeof execute !== "function") {
    throw new GuardedToolError(
      "tool_has_no_execute",
      `AI SDK tool '${options.name}' has no execute function: only tools that run in this process can be ledgered.`,
    )
  }
  const { bounds: boundsOptions, boundary = "whole", meta, onWarning, ...ledgerOptions } = options
  const { name } = options
  checkGuard(ledger, ledgerOptions, boundary)
  const bounds = compileBounds(name, toBoundarySchema(tool.inputSchema), boundsOptions)

  const failed = failedCallsOf(ledger, name)

  const guarded = async (input: unknown, callOptions: ToolExecutionOptions): Promise<unknown> => {
    const args = await bounds.input(asArgs(name, input))
    // Cleaned apart, as the other integrations do: an empty field of `meta` must not shadow the SDK's call id (no
    // id, no dedupe: every redispatch would run).
    const callMeta = {
      ...cleanMeta({ toolCallId: callOptions.toolCallId, signal: callOptions.abortSignal }),
      ...cleanMeta(meta?.(callOptions) ?? {}),
    }
    // One ledgered function per call: the body needs this call's options, which the ledger does not carry.
    let started: string | null = null
    let done: { readonly value: unknown } | null = null
    const run = ledger.tool(ledgerOptions, async (checked, tx) => {
      started = tx.requestId
      const forBody: ToolExecutionOptions = { ...callOptions }
      bindTransition(forBody, tx)
      const out = await runWithBoundary(boundary, ledgerOptions, tx, () =>
        finalValue(execute(checked, forBody)),
      )
      done = { value: await bounds.output(out) }
      return done.value
    })
    // A provider that sends "" as the call id (Gemini's OpenAI-compatible endpoint) leaves a keyed call no identity.
    checkCallId(run, name, callMeta)
    // A model told that a call failed calls again under a new id (failed-calls.ts). The conversation: the thread
    // `meta` names, else the `experimental_context` object the application passed for the run; one object may
    // serve every run (shared dependencies), so then only a failed call this step's messages show is held.
    const held = failed.held(callMeta, args, sideEffectClassOf(run), callOptions.experimental_context, (id) =>
      shown(callOptions.messages, id),
    )
    // The SDK sends the model a tool error's message: an outage's names the driver's paths and hosts.
    return await runHeld(
      failed,
      held,
      ledger,
      () => started,
      () => run(args, callMeta).catch((e: unknown) => outcomeStands(e, done, name, onWarning)),
      callMeta,
    ).catch(hideOutage)
  }
  return { ...tool, execute: guarded }
}

/** Whether the model's messages hold the tool call `toolCallId`. */
function shown(messages: readonly ModelMessage[] | undefined, toolCallId: string): boolean {
  return !!messages?.some(
    (m) =>
      m.role === "assistant" &&
      typeof m.content !== "string" &&
      m.content.some((p) => p.type === "tool-call" && p.toolCallId === toolCallId),
  )
}

/** {@link guardTool} for every tool of a tool set that has an `execute`; tools without one are kept as they are. */
export function guardTools<TOOLS extends Record<string, Tool>>(
  ledger: ToolLedger,
  tools: TOOLS,
  options: GuardAiToolsOptions = {},
): TOOLS {
  checkToolKeys(options, Object.keys(tools))
  return Object.fromEntries(
    Object.entries(tools).map(([name, tool]) => [
      name,
      typeof tool.execute === "function" ? guardTool(ledger, tool, { ...options[name], name }) : tool,
    ]),
  ) as TOOLS
}

/**
 * The transition of the call an `execute` function is running: pass the options object `execute` received.
 * Use it with `boundary: "manual"` to mark exactly the irreversible part: `transitionOf(options).sideEffect(...)`.
 */
export function transitionOf(options: ToolExecutionOptions): GuardContext {
  return lookupTransition(options, "execute options")
}

/** Options of {@link guardTranscript}. */
export interface TranscriptGuardOptions {
  /** Default: a MessageValidator for AI SDK model messages. */
  readonly validator?: MessageValidator
  /** Token/message limits, duplicated turns, silently dropped messages. */
  readonly history?: HistoryGuard
  /** Trim with `history` (keeping tool calls with their results) before validating. Default false. */
  readonly trim?: boolean
  /** Called when a step's messages were repaired, with what was changed. */
  readonly onRepair?: (report: RepairReport, stepNumber: number) => void
}

/**
 * A `prepareStep` function that repairs the model messages before every step (orphaned or duplicated tool
 * results, reused call ids, calls left without a result) and applies the history guard. Compose it with your
 * own `prepareStep` by calling it and spreading its result.
 */
export function guardTranscript(
  options: TranscriptGuardOptions = {},
): (step: { messages: ModelMessage[]; stepNumber: number }) => { messages: ModelMessage[] } {
  const validator = options.validator ?? new MessageValidator({ format: "ai-sdk" })
  return ({ messages, stepNumber }) => {
    const { messages: repaired, report } = validator.repair(messages)
    if (report.changed) options.onRepair?.(report, stepNumber)
    let out = repaired
    if (options.history) {
      if (options.trim) out = options.history.trim(out)
      out = [...options.history.validate(out)]
    }
    return { messages: out }
  }
}

function asArgs(name: string, input: unknown): Record<string, unknown> {
  if (typeof input === "object" && input !== null && !Array.isArray(input))
    return input as Record<string, unknown>
  throw new GuardedToolError(
    "tool_input_not_object",
    `AI SDK tool '${name}' got ${Array.isArray(input) ? "an array" : typeof input} as input: a ledgered tool takes an object of named arguments; give it an object inputSchema.`,
  )
}

/** A streaming `execute` (an async iterable) is drained: the ledger records, and a replay returns, the last value. */
async function finalValue(out: unknown): Promise<unknown> {
  if (typeof out === "object" && out !== null && Symbol.asyncIterator in out) {
    let last: unknown
    for await (const value of out as AsyncIterable<unknown>) last = value
    return last
  }
  // Awaited, not returned: an execute that throws before its first await gives a promise already rejected, which
  // workerd reports as uncaught when an async function hands it back.
  return await out
}

interface AiSdkSchemaLike {
  readonly validate?: (
    value: unknown,
  ) =>
    | { success: true; value: unknown }
    | { success: false; error: Error }
    | PromiseLike<{ success: true; value: unknown } | { success: false; error: Error }>
  readonly jsonSchema?: unknown
}

/** Zod and Standard Schemas go to `bounded()` as they are; an AI SDK `jsonSchema()`/`lazySchema()` via its validator. */
function toBoundarySchema(schema: unknown): BoundarySchema | undefined {
  if (isStandardSchema(schema)) return schema
  const resolved = typeof schema === "function" ? (schema as () => unknown)() : schema
  if (isStandardSchema(resolved)) return resolved
  const validate = (resolved as AiSdkSchemaLike | null)?.validate
  if (typeof validate !== "function") return undefined
  const adapted: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "ai-sdk",
      validate: async (value) => {
        const r = await validate(value)
        return r.success ? { value: r.value } : { issues: [{ message: r.error.message }] }
      },
    },
  }
  return adapted
}
