// The model port: the one choke point the harness wraps with budget checks, permits and measurements.
import type { RunUsage } from "./types.ts"

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
}

export type Message =
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string; readonly tool_calls?: readonly ToolCall[] }
  | {
      readonly role: "tool"
      readonly tool_call_id: string
      readonly name: string
      readonly content: string
      readonly is_error?: boolean
    }

/** What a model sees of a tool: a name, a description and JSON-Schema parameters. */
export interface ToolDef {
  readonly name: string
  readonly description?: string
  readonly parameters: Readonly<Record<string, unknown>>
}

export interface ModelSettings {
  readonly temperature?: number
  readonly max_tokens?: number
  readonly parallel_tool_calls?: boolean
}

/** Who is asking: set by the harness, so adapters and fakes can attribute a request. Never sent to a provider. */
export interface RequestContext {
  readonly run_id: string
  readonly parent_run_id: string
  readonly task_id: string
  readonly depth: number
  /** 0-based request number within this (child) run. */
  readonly step: number
}

export interface ModelRequest {
  /** "provider:model". */
  readonly model: string
  readonly instructions?: string
  readonly messages: readonly Message[]
  readonly tools: readonly ToolDef[]
  readonly settings?: ModelSettings
  readonly context: RequestContext
}

export type ResponsePart =
  | { readonly type: "text"; readonly text: string }
  | {
      readonly type: "tool_call"
      readonly id: string
      readonly name: string
      readonly args: Readonly<Record<string, unknown>>
    }

/** Token counts as reported; a missing count stays missing (null in samples), never estimated. */
export type ResponseUsage = Partial<
  Pick<
    RunUsage,
    | "input_tokens"
    | "output_tokens"
    | "cache_read_tokens"
    | "cache_write_tokens"
    | "input_audio_tokens"
    | "output_audio_tokens"
    | "cache_audio_read_tokens"
    | "details"
  >
>

export interface ModelResponse {
  readonly parts: readonly ResponsePart[]
  readonly usage?: ResponseUsage
  readonly model_name?: string
  readonly provider_name?: string
  readonly finish_reason?: string
}

/** A model transport. Retries, if any, belong inside it; the harness never retries a request. */
export interface ModelClient {
  request(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse>
}
