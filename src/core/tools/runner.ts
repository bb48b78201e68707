import { InvalidOptionError } from "../errors.ts"
import {
  shownName,
  ToolBoundaryError,
  ToolBoundaryExhaustedError,
  ToolRunnerConfigError,
  toolErrorMessage,
} from "./errors.ts"
import { type RegisteredTool, type ToolRegistry, toolNameOf } from "./registry.ts"

/** Options for {@link ToolRunner}. */
export interface ToolRunnerOptions {
  /** Allowlist checked before every call; without one every tool is allowed. */
  registry?: ToolRegistry
  /** Times the model is asked to correct a blocked call. Default 2. */
  maxLlmRetries?: number
  /** Total attempts per tool call when the output is invalid (the original's count). 0 or 1 = one attempt. Default 3. */
  maxToolRetries?: number
}

/** A tool call chosen by the model. */
export interface ParsedToolCall {
  name: string
  args: unknown
  /** The id of the new call; defaults to the previous id. */
  toolCallId?: string
}

/** Arguments of {@link ToolRunner.runWithLlmRetry}. */
export interface LlmRetryRequest<M> {
  messages: readonly M[]
  toolCallId: string
  args: unknown
  /** Sends the transcript to the model and returns the full new transcript. */
  invokeLlm: (messages: M[]) => Promise<readonly M[]> | readonly M[]
  /** Extracts the model's next tool call, or null when it answered without one. It may name another tool. */
  parseToolCall: (messages: readonly M[], previousTool: string) => ParsedToolCall | null
  /** Builds the message reporting a blocked call; defaults to an OpenAI chat `tool` message. */
  formatError?: (toolCallId: string, error: ToolBoundaryError) => M
}

/** What {@link ToolRunner.runWithLlmRetry} returns. */
export interface LlmRetryResult<M> {
  result: unknown
  messages: M[]
  /** The tool that finally succeeded (the model may have switched tools). */
  toolName: string
  toolCallId: string
}

type AnyTool = (args: never) => unknown

/**
 * Runs guarded tools with the original's two retry loops: invalid output is retried at tool level, and
 * input/scope/allowlist failures, and output failures left after those retries (their llmMessage quotes up to 300
 * characters of the result), go back to the model as a tool error so it can correct the call.
 */
export class ToolRunner {
  readonly registry: ToolRegistry | undefined
  readonly maxLlmRetries: number
  readonly maxToolRetries: number

  constructor(options: ToolRunnerOptions = {}) {
    this.registry = options.registry
    this.maxLlmRetries = retryCount("maxLlmRetries", options.maxLlmRetries, 2)
    this.maxToolRetries = retryCount("maxToolRetries", options.maxToolRetries, 3)
  }

  /**
   * Checks the allowlist, then calls `tool`, retrying only invalid-output failures (whatever field failed)
   * up to `maxToolRetries` attempts in total. Other errors propagate at once.
   */
  async call<A, R>(
    tool: ((args: A) => R | Promise<R>) & { readonly toolName?: string },
    args: A,
  ): Promise<R> {
    const name = toolNameOf(tool as RegisteredTool)
    const registry = this.registry
    // register(tool, "alias") allows the tool under the alias only: its own name need not be allowed.
    registry?.validateCall(registry.allowedTools.find((n) => registry.get(n) === tool) ?? name)
    const attempts = Math.max(1, this.maxToolRetries)
    for (let attempt = 1; ; attempt++) {
      try {
        return await tool(args)
      } catch (error) {
        // Only this tool's own output is retried: an inner tool's invalid output is a failure of this one's
        // body, and running the whole body again would repeat whatever it already did.
        const retryable = ownBoundaryError(error, name) && error.stage === "output"
        if (!retryable || attempt >= attempts) throw error
      }
    }
  }

  /**
   * Calls `tool`; on a ToolBoundaryError appends the error for the model, asks it again, and runs whatever
   * allowed tool it picks next. At most `maxLlmRetries` model calls.
   */
  async runWithLlmRetry<M>(tool: RegisteredTool, request: LlmRetryRequest<M>): Promise<LlmRetryResult<M>> {
    const format =
      request.formatError ?? ((id: string, e: ToolBoundaryError) => toolErrorMessage(id, e.llmMessage) as M)
    let messages = [...request.messages]
    let current: RegisteredTool | undefined = tool
    let name = toolNameOf(tool)
    let args = request.args
    let toolCallId = request.toolCallId
    let last: ToolBoundaryError | undefined
    for (let attempt = 0; ; attempt++) {
      try {
        if (!current) this.#validateName(name)
        if (!current)
          throw new ToolRunnerConfigError(`Tool '${shownName(name)}' is allowed but has no implementation.`)
        const result = await this.call(current as AnyTool as (a: unknown) => unknown, args)
        return { result, messages, toolName: name, toolCallId }
      } catch (error) {
        // A boundary error of another tool (one this tool called) is not the model's to correct, and its
        // llmMessage quotes that call's arguments: it propagates like any failure of the tool.
        if (!ownBoundaryError(error, name, current)) throw error
        last = error
        messages.push(format(toolCallId, error))
        if (attempt >= this.maxLlmRetries) break
        messages = [...(await request.invokeLlm(messages))]
        const next = request.parseToolCall(messages, name)
        if (!next) {
          throw new ToolBoundaryExhaustedError(
            `The model answered without a tool call after '${shownName(name)}' was blocked; its last answer is in messages.`,
            { lastError: last, messages },
          )
        }
        name = next.name
        toolCallId = next.toolCallId ?? toolCallId
        args = next.args
        current = this.#resolve(name, tool)
      }
    }
    throw new ToolBoundaryExhaustedError(
      `Tool '${shownName(name)}' failed after ${this.maxLlmRetries} LLM retries. Inspect lastError and fix the tool or prompt.`,
      { lastError: last, messages },
    )
  }

  // The model's name is looked up as the model wrote it: a tool registered under an alias is not found under its
  // own toolName (that exception is `call()`'s, for the application). The original serves a name the allowlist
  // allows without an implementation, or every name when there is no registry.
  #resolve(name: string, original: RegisteredTool): RegisteredTool | undefined {
    const r = this.registry
    return r?.get(name) ?? (name === toolNameOf(original) && (!r || r.isAllowed(name)) ? original : undefined)
  }

  #validateName(name: string): void {
    if (this.registry) this.registry.validateCall(name)
    else
      throw new ToolRunnerConfigError(
        `The model chose '${shownName(name)}', but the runner has no registry to find it in.`,
      )
  }
}

/** True for a ToolBoundaryError raised at the boundary of the tool being run (by name, or by its own toolName). */
function ownBoundaryError(error: unknown, name: string, tool?: RegisteredTool): error is ToolBoundaryError {
  if (!(error instanceof ToolBoundaryError)) return false
  return error.toolName === name || (tool !== undefined && error.toolName === toolNameOf(tool))
}

// NaN (say, Number() of an unset environment variable) compared false with every attempt number,
// so a model that kept failing, or a tool that kept returning bad output, was retried forever.
function retryCount(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new InvalidOptionError(
      `${option} must be a finite number, got ${String(value)}. Pass e.g. { ${option}: 2 }.`,
    )
  }
  return Math.max(0, Math.floor(value))
}
