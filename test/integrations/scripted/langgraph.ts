// A real LangGraph StateGraph (agent node → ToolNode, MemorySaver checkpoints) around a scripted chat model built
// on LangChain's BaseChatModel: it asks for the scripted tool calls until a tool result is in the history.
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import type { StructuredToolInterface } from "@langchain/core/tools"
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph"
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"

export type ToolCall = { id: string; name: string; args: Record<string, unknown> }

class ScriptedChatModel extends BaseChatModel {
  constructor(readonly calls: ToolCall[]) {
    super({})
  }
  _llmType(): string {
    return "scripted"
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const last = messages.at(-1)
    const message =
      last instanceof ToolMessage
        ? new AIMessage(`done: ${String(last.content)}`)
        : new AIMessage({ content: "", tool_calls: this.calls })
    return { generations: [{ text: String(message.content), message }] }
  }
}

export function scriptedGraph(
  tools: StructuredToolInterface[],
  calls: ToolCall[],
  checkpointer = new MemorySaver(),
  handleToolErrors = true,
) {
  const model = new ScriptedChatModel(calls)
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new ToolNode(tools, { handleToolErrors }))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer })
}

export type Graph = ReturnType<typeof scriptedGraph>

/** The checkpoint taken after the agent asked for the tool, i.e. the one LangGraph resumes the ToolNode from. */
export async function checkpointBeforeTools(graph: Graph, threadId: string): Promise<string> {
  for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: threadId } })) {
    if (snapshot.next.includes("tools")) return snapshot.config.configurable?.checkpoint_id as string
  }
  throw new Error("no checkpoint before the tools node")
}

export const toolMessages = (state: { messages: BaseMessage[] }) =>
  state.messages.filter((m): m is ToolMessage => m instanceof ToolMessage)

export const newLedger = (storage = new MemoryLedgerStorage()) =>
  new ActionLedger({ storage, pollInterval: 0.005, onWarning: () => {} })
