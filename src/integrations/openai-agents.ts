// OpenAI Agents JS glue. Only types are imported from @openai/agents: this entry never loads the framework at run
// time. The guard wraps the options given to `tool()` rather than the FunctionTool it returns: `tool()` turns a
// thrown error into text for the model (its errorFunction), so only `execute` itself sees a failure as a failure,
// which the ledger must record (UNKNOWN after a crossed boundary, FAILED before it).
import type { FunctionTool, RunContext } from "@openai/agents"
import type { CallMeta } from "../core/ledger/index.ts"
import { type BoundarySchema, isStandardSchema, type StandardSchemaV1 } from "../core/tools/index.ts"
import { compileBounds, type GuardBoundsOptions } from "./bounds.ts"
import { GuardedToolError, isOutage, outcomeStands, shownToModel } from "./errors.ts"
import { failedCallsOf, runHeld, sideEffectClassOf } from "./failed-calls.ts"
import {
  type BoundaryMode,
  bindTransition,
  checkCallId,
  checkGuard,
  cleanMeta,
  type GuardContext,
  type GuardLedgerOptions,
  lookupTransition,
  runWithBoundary,
  type ToolLedger,
} from "./ledger-like.ts"

export type { GuardBoundsOptions } from "./bounds.ts"
export { GuardedToolError } from "./errors.ts"
/** The SDK's per-call details (the function call item, the abort signal); the SDK does not export its name. */
export type ToolCallDetails = NonNullable<Parameters<FunctionTool["invoke"]>[2]>

export type { BoundaryMode, GuardContext, GuardLedgerOptions, ToolLedger } from "./ledger-like.ts"

/** Options of {@link guardToolOptions}. The ledger name is the tool's `name`. */
export interface GuardAgentsToolOptions extends GuardLedgerOptions {
  /** `bounded()` checks around the ledger; a zod `parameters` schema is used unless `schema` is given. */
  readonly bounds?: GuardBoundsOptions | false
  /** Default `"whole"`: see {@link BoundaryMode}. */
  readonly boundary?: BoundaryMode
  /**
   * Extra call metadata (thread, run, node...), e.g. a conversation id from the run context. A method, as `execute`
   * is, so a `meta` typed for the agent's context (`RunContext<MyContext>`) is accepted.
   */
  meta?(runContext: RunContext<unknown> | undefined, details: ToolCallDetails | undefined): Partial<CallMeta>
}

/** What `execute` receives for a `parameters` schema: the schema's output type (zod, any Standard Schema). */
export type ToolInput<P> = P extends StandardSchemaV1<infer _In, infer Out> ? Out : unknown

/** The `tool()` options this guard needs: a name, the parameters, and `execute(input, runContext, details)`. */
export interface AgentsToolOptionsLike<P, R> {
  readonly name: string
  readonly parameters?: P
  // Method syntax on purpose: its parameters are checked bivariantly, so an execute typed for the agent's own
  // context type (`RunContext<MyContext>`) is accepted.
  execute(input: ToolInput<P>, runContext?: RunContext<unknown>, details?: ToolCallDetails): R | Promise<R>
}

/**
 * Returns `tool()` options whose `execute` runs through the ledger, keyed by the model's `callId`: a function
 * call the runner executes again (a resumed run, a retried turn, a duplicated item) returns the recorded result
 * instead of running twice. Use: `tool(guardToolOptions(ledger, { name, parameters, execute }, { binding }))`.
 */
export function guardToolOptions<P, R, O extends AgentsToolOptionsLike<P, R>>(
  ledger: ToolLedger,
  options: O & AgentsToolOptionsLike<P, R>,
  guard: GuardAgentsToolOptions = {},
): O {
  const name = options.name
  if (!name) {
    throw new GuardedToolError(
      "tool_needs_a_name",
      "guardToolOptions() needs the tool's `name` in its options: the ledger keys every call by tool name.",
    )
  }
  const execute = options.execute
  const { bounds: boundsOptions, boundary = "whole", meta, onWarning, ...rest } = guard
  const ledgerOptions = { ...rest, name }
  checkGuard(ledger, ledgerOptions, boundary)
  const schema = isStandardSchema(options.parameters) ? (options.parameters as BoundarySchema) : undefined
  const bounds = compileBounds(name, schema, boundsOptions)

  const failed = failedCallsOf(ledger, name)

  const guarded = async (
    input: unknown,
    runContext?: RunContext<unknown>,
    details?: ToolCallDetails,
  ): Promise<R> => {
    const boxed = typeof input === "string"
    const args = await bounds.input(asArgs(name, input))
    const callMeta = {
      ...agentsCallMeta(details),
      ...cleanMeta(meta?.(runContext, details) ?? {}),
    }
    let started: string | null = null
    let done: { readonly value: R } | null = null
    const run = ledger.tool(ledgerOptions, async (checked: Record<string, unknown>, tx) => {
      started = tx.requestId
      const forBody: ToolCallDetails = { ...details }
      bindTransition(forBody, tx)
      const out = await runWithBoundary(boundary, ledgerOptions, tx, () =>
        execute((boxed ? checked.input : checked) as ToolInput<P>, runContext, forBody),
      )
      done = { value: bytesAsBase64(await bounds.output(out)) }
      return done.value
    })
    // The SDK passes a provider's blank call id ("") as it came: a keyed call without one has no identity.
    checkCallId(run, name, callMeta)
    // A model told that a call failed ("Please try again") calls again under a new call id (failed-calls.ts). The
    // conversation: the thread `meta` names, else the run's RunContext, the one object every call of a run gets.
    // A `timeoutMs` the SDK enforces aborts `details.signal` and tells the model the call timed out while the body
    // may still charge: the signal marks the call as given up on.
    const held = failed.held(callMeta, args, sideEffectClassOf(run), runContext)
    return await runHeld(
      failed,
      held,
      ledger,
      () => started,
      () => run(args, callMeta).catch((e: unknown) => outcomeStands(e, done, name, onWarning)),
      callMeta,
    )
  }
  const { errorFunction: own, outputSchema } = options as {
    errorFunction?: ToolErrorText | null
    outputSchema?: unknown
  }
  // tool() hands a thrown error to `errorFunction` and gives its text to the model; a null one fails the run, and
  // so does the SDK's default for a tool with an outputSchema (text would not match the schema): kept as they are.
  if (own === null || (own === undefined && outputSchema !== undefined))
    return { ...options, execute: guarded }
  const errorFunction: ToolErrorText = (runContext, error, details) => {
    // The store cannot be used: whether the effect happened is not recorded. Told "Please try again" (the SDK's
    // default text), the model calls again under a new call id, which is a new ledger key: a second payment. Fail
    // closed, with the ledger's own error for the application (the model reads nothing of it).
    if (isOutage(error)) throw error
    const code = (error as { code?: unknown } | null)?.code
    const shown = shownToModel(error)
    if (own) return own(runContext, shown, details)
    const text = String(shown)
    return code === "ledger_hard_block"
      ? `This call was blocked and did not run: its side effect may already have happened, and an operator must reconcile it first. Do not call the tool again for it. Error: ${text}`
      : `An error occurred while running the tool. Please try again. Error: ${text}`
  }
  return { ...options, execute: guarded, errorFunction }
}

type ToolErrorText = (
  runContext: RunContext<unknown>,
  error: unknown,
  details?: ToolCallDetails,
) => string | Promise<string>

/** The ledger's call metadata from the SDK's per-call details: the function call's `callId` and the abort signal. */
export function agentsCallMeta(details: ToolCallDetails | undefined): CallMeta {
  const call = details?.toolCall as { callId?: unknown } | undefined
  return cleanMeta({
    toolCallId: typeof call?.callId === "string" ? call.callId : undefined,
    ...(details?.signal ? { signal: details.signal } : {}),
  })
}

/** The transition of the running call: pass the `details` (third argument) your `execute` received. */
export function transitionOf(details: ToolCallDetails | undefined): GuardContext {
  return lookupTransition(details, "execute details")
}

/**
 * The SDK's image and file outputs take their bytes as a Uint8Array or as base64 text alike. The ledger stores JSON,
 * where a Uint8Array is `{"0":137,...}`: a replay sent the model that as a text dump instead of the image. Their
 * bytes (in the output's fields, or one record down: `image.data`, `file.data`) are base64 text, first run included.
 */
function bytesAsBase64<T>(out: T): T {
  const bytes = (v: unknown): unknown => {
    if (!(v instanceof Uint8Array)) return v
    // In slices: a character at a time took 2 s and half a GB of heap for a 20 MB file, on the call's path.
    let text = ""
    for (let i = 0; i < v.length; i += 8192)
      text += String.fromCharCode.apply(null, v.subarray(i, i + 8192) as unknown as number[])
    return btoa(text)
  }
  // Plain records only: a class instance (a Date) is left to the ledger's JSON, as before.
  const fields = (v: unknown, inner: (x: unknown) => unknown): unknown =>
    v && Object.getPrototypeOf(v) === Object.prototype
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, inner(x)]))
      : bytes(v)
  const item = (v: unknown) => {
    const type = (v as { type?: unknown } | null)?.type
    return type === "image" || type === "file" ? fields(v, (x) => fields(x, bytes)) : v
  }
  return (Array.isArray(out) ? out.map(item) : item(out)) as T
}

function asArgs(name: string, input: unknown): Record<string, unknown> {
  if (typeof input === "object" && input !== null && !Array.isArray(input))
    return input as Record<string, unknown>
  // A non-strict tool without parameters gets the raw string; the ledger hashes an arguments object.
  if (typeof input === "string") return { input }
  throw new GuardedToolError(
    "tool_input_not_object",
    `OpenAI Agents tool '${name}' got ${typeof input} as input: a ledgered tool takes an object of named arguments.`,
  )
}
