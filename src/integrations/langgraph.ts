// LangGraph.js / LangChain tools. Only types are imported from @langchain/core: this entry loads the framework
// only to revive a replayed Command or message (langgraph-replay.ts). A guarded tool is the caller's tool with its
// `_call` (the documented extension point of StructuredTool) running through the ledger, so schema, name, ToolNode and
// streaming behave as before.
import type { CallbackManagerForToolRun } from "@langchain/core/callbacks/manager"
import type { StructuredToolInterface, ToolRunnableConfig } from "@langchain/core/tools"
import type { CallMeta } from "../core/ledger/index.ts"
import { type BoundarySchema, isStandardSchema } from "../core/tools/index.ts"
import { compileBounds, type GuardBoundsOptions } from "./bounds.ts"
import { GuardedToolError, hideOutage, outcomeStands } from "./errors.ts"
import { failedCallsOf, runHeld, sideEffectClassOf } from "./failed-calls.ts"
import {
  isGraphInterrupt,
  isInvalidResume,
  settleInterrupt,
  trackedTransition,
} from "./langgraph-interrupt.ts"
import { reviveReplayed, storableResult } from "./langgraph-replay.ts"
import {
  type BoundaryMode,
  bindTransition,
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

/** Options of {@link guardTool}. The ledger name is the tool's `name`. */
export interface GuardLangGraphToolOptions extends GuardLedgerOptions {
  /** `bounded()` checks around the ledger; the tool's zod/Standard Schema is used unless `schema` is given. */
  readonly bounds?: GuardBoundsOptions | false
  /** Default `"whole"`: see {@link BoundaryMode}. */
  readonly boundary?: BoundaryMode
  /** Overrides or adds call metadata; the defaults come from {@link langGraphCallMeta}. */
  readonly meta?: (config: ToolRunnableConfig) => Partial<CallMeta>
}

/**
 * The ledger's call metadata from a LangGraph tool config: `tool_call_id` (set by ToolNode and by invoking a
 * tool with a tool call), `thread_id` and `run_id` from `configurable` (or the platform's `metadata.run_id`),
 * and the graph node from `metadata.langgraph_node`. LangChain's own `config.runId` is NOT used: it is a fresh
 * id for every invocation, so a replay from a checkpoint would never match the first run.
 */
export function langGraphCallMeta(config: ToolRunnableConfig | undefined): CallMeta {
  const configurable = (config?.configurable ?? {}) as Record<string, unknown>
  const metadata = (config?.metadata ?? {}) as Record<string, unknown>
  return cleanMeta({
    toolCallId: str(config?.toolCall?.id),
    threadId: str(configurable.thread_id),
    runId: str(configurable.run_id) ?? str(metadata.run_id),
    node: str(metadata.langgraph_node),
    ...(config?.signal ? { signal: config.signal } : {}),
  })
}

type ToolCallFn = (
  arg: unknown,
  runManager?: CallbackManagerForToolRun,
  parentConfig?: ToolRunnableConfig,
) => Promise<unknown>

/**
 * Wraps a LangChain tool (from `tool()`, `DynamicStructuredTool`, or a StructuredTool subclass) so each call runs
 * through the ledger, keyed by its tool-call id and scoped by thread and node (not run): a tool call LangGraph replays
 * from a checkpoint, or redispatches while the first is still running (langgraph#7417), runs once and both get
 * its result. Returns a new tool; the original is left as it was.
 */
export function guardTool<T extends StructuredToolInterface>(
  ledger: ToolLedger,
  tool: T,
  options: GuardLangGraphToolOptions = {},
): T {
  const inner = (tool as unknown as { _call?: ToolCallFn })._call
  if (typeof inner !== "function") {
    throw new GuardedToolError(
      "unsupported_tool",
      `LangChain tool '${tool.name}' has no _call method: guard a tool made by tool(), DynamicStructuredTool or a StructuredTool subclass.`,
    )
  }
  const { bounds: boundsOptions, boundary = "whole", meta, onWarning, ...rest } = options
  const name = tool.name
  const ledgerOptions = { ...rest, name }
  checkGuard(ledger, ledgerOptions, boundary)
  const schema = isStandardSchema(tool.schema) ? (tool.schema as BoundarySchema) : undefined
  const bounds = compileBounds(name, schema, boundsOptions)
  // A string-schema tool (DynamicTool style) is hashed as `{ input }`; its own schema already checked the string.
  const stringBounds = compileBounds(name, undefined, boundsOptions)

  const failed = failedCallsOf(ledger, name)

  const guarded: ToolCallFn = async (arg, runManager, parentConfig) => {
    const boxed = typeof arg === "string"
    const limits = boxed ? stringBounds : bounds
    const args = await limits.input(boxed ? { input: arg } : asArgs(name, arg))
    // The run id is left out of the call's identity: a run on a thread (every LangGraph Platform run, a resume
    // after interrupt()) re-executes the tool calls of its checkpoint under a new run_id, and a key scoped by run
    // would run them a second time. Thread, node and tool-call id are what a replay keeps; `meta` can add a run.
    const { runId: _perRun, ...replayScope } = langGraphCallMeta(parentConfig)
    const callMeta = { ...replayScope, ...cleanMeta(meta?.(parentConfig ?? {}) ?? {}) }
    let attempt: GuardContext | null = null
    let effectBegan = () => false
    // What this run's body returned, as it returned it: the ledger keeps a JSON form (storableResult), and the first
    // run hands ToolNode the tool's own value, as the unguarded tool would (a Date stays a Date).
    let live: { readonly value: unknown } | null = null
    // The call ToolNode gives the result to: a replay stored by another call answers this one (langgraph-replay.ts).
    const callId = str(parentConfig?.toolCall?.id)
    const replayed = (stored: unknown) => reviveReplayed(stored, callId)
    const run = ledger.tool(ledgerOptions, async (checked: Record<string, unknown>, raw) => {
      attempt = raw
      const { tx, began } = trackedTransition(raw)
      effectBegan = began
      // tool() hands its function a copy of the config, but `configurable` travels by reference: the transition
      // is tied to a fresh `configurable` of this call.
      const configurable = { ...parentConfig?.configurable }
      const config: ToolRunnableConfig = { ...parentConfig, configurable }
      bindTransition(configurable, tx)
      const out = await runWithBoundary(boundary, ledgerOptions, tx, () =>
        inner.call(tool, boxed ? checked.input : checked, runManager, config),
      )
      const value = await limits.output(out)
      live = { value }
      return storableResult(value, callId)
    })
    // A model told that a call failed calls again under a new id: while the failed call may have taken effect,
    // that is the same intent (failed-calls.ts).
    const held = failed.held(callMeta, args, sideEffectClassOf(run))
    const started = () => (attempt as GuardContext | null)?.requestId ?? null
    // ToolNode sends the model the thrown error's message: an outage's names the driver's paths and hosts.
    return await runHeld(
      failed,
      held,
      ledger,
      started,
      async () => {
        try {
          const out = await run(args, callMeta)
          // A replay returns the stored JSON of the first run's result: a Command or a message gets its class back.
          const first = live as { readonly value: unknown } | null
          return first ? first.value : await replayed(out)
        } catch (err) {
          if (attempt && (isGraphInterrupt(err) || isInvalidResume(err))) {
            await settleInterrupt(ledger, attempt, name, effectBegan(), err)
          }
          return outcomeStands(err, live, name, onWarning)
        }
      },
      callMeta,
      replayed,
    ).catch(hideOutage)
  }
  const wrapped = Object.create(tool) as T
  Object.defineProperty(wrapped, "_call", { value: guarded, writable: true, configurable: true })
  return wrapped
}

/** {@link guardTool} for a list of tools (e.g. for `new ToolNode(guardTools(ledger, tools, {...}))`), options by name. */
export function guardTools<T extends StructuredToolInterface>(
  ledger: ToolLedger,
  tools: readonly T[],
  options: Readonly<Record<string, GuardLangGraphToolOptions>> = {},
): T[] {
  checkToolKeys(
    options,
    tools.map((t) => t.name),
  )
  return tools.map((t) => guardTool(ledger, t, options[t.name] ?? {}))
}

/** The transition of the running call: pass the `config` your tool function received. */
export function transitionOf(config: ToolRunnableConfig | undefined): GuardContext {
  return lookupTransition(config?.configurable, "tool config")
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined
}

function asArgs(name: string, input: unknown): Record<string, unknown> {
  if (typeof input === "object" && input !== null && !Array.isArray(input))
    return input as Record<string, unknown>
  throw new GuardedToolError(
    "tool_input_not_object",
    `LangChain tool '${name}' got ${typeof input} as input: a ledgered tool takes an object of named arguments.`,
  )
}
