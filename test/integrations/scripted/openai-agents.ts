// A scripted model for the OpenAI Agents SDK's real Runner: each turn answers with the scripted function calls (the
// model writes the call ids, as a hostile one would); when the script is done, with a final message.
import {
  type AgentOutputItem,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  Usage,
} from "@openai/agents"

export type Call = { callId: string; name: string; args: Record<string, unknown> }

export class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = []
  #turn = 0
  constructor(
    readonly turns: Call[][],
    readonly onTurn: (turn: number) => void = () => {},
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request)
    this.onTurn(this.#turn)
    const calls = this.turns[this.#turn++]
    const output: AgentOutputItem[] = calls
      ? calls.map((c) => ({
          type: "function_call" as const,
          callId: c.callId,
          name: c.name,
          arguments: JSON.stringify(c.args),
          status: "completed" as const,
        }))
      : [
          {
            type: "message" as const,
            role: "assistant" as const,
            status: "completed" as const,
            content: [{ type: "output_text" as const, text: "done" }],
          },
        ]
    return { usage: new Usage(), output, responseId: `resp_${this.#turn}` }
  }

  getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream")
  }
}

export class ScriptedProvider implements ModelProvider {
  constructor(readonly model: ScriptedModel) {}
  getModel(): Model {
    return this.model
  }
}
