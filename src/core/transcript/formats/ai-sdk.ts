import { isRecord } from "../clone.ts"
import { isSyntheticResultText } from "../interrupted.ts"
import { objectArgumentsProblem } from "../invalid-arguments.ts"
import type { Message } from "../types.ts"
import {
  composeContent,
  contentParts,
  type Decomposed,
  type FormatAdapter,
  type Part,
  stringOrUndefined,
} from "./adapter.ts"

// Vercel AI SDK ModelMessage: tool-call parts in assistant messages, tool-result parts in the tool
// messages right after. User content allows text, image and file parts only. Provider-executed calls carry
// their result inside the assistant message, so an assistant tool-result is misplaced only when it answers
// a call the client executes. An approval request is answered by a tool-approval-response, which the SDK
// turns into the call's result (see answeredByClient).
function resultIsError(b: Record<string, unknown>): boolean {
  if (b.isError === true) return true
  const output = isRecord(b.output) ? b.output : undefined
  if (typeof output?.type === "string" && output.type.startsWith("error")) return true
  return isSyntheticResultText(output?.value ?? b.result)
}

// Whether a transcript's results are AI SDK 4's, scanned once per transcript rather than once per result made.
const legacyStyle = new WeakMap<readonly Decomposed[], boolean>()

// AI SDK 4 calls carry `args`; 5 and later `input`.
const argsField = (raw: Record<string, unknown>): "input" | "args" =>
  "input" in raw || !("args" in raw) ? "input" : "args"

export const aiSdkAdapter: FormatAdapter = {
  format: "ai-sdk",
  roles: new Set(["system", "user", "assistant", "tool"]),
  systemRoles: new Set(["system"]),
  carrierRole: "tool",
  blockShape: "grouped",
  idPrefix: "call_missing_",

  decompose(message) {
    const role = typeof message.role === "string" ? message.role : ""
    const { content, ...shell } = message
    const parts = contentParts(
      content,
      (b): Part => {
        if (b.type === "tool-call" && b.providerExecuted === true) {
          const id = stringOrUndefined(b.toolCallId)
          return { kind: "other", ...(id ? { providerCallId: id } : {}), raw: b }
        }
        if (b.type === "tool-call") {
          return {
            kind: "call",
            id: stringOrUndefined(b.toolCallId),
            name: stringOrUndefined(b.toolName),
            raw: b,
          }
        }
        if (b.type === "tool-result") {
          return {
            kind: "result",
            id: stringOrUndefined(b.toolCallId),
            isError: resultIsError(b),
            ...(role === "assistant" ? { allowedForProviderCall: true } : {}),
            raw: b,
          }
        }
        return { kind: "other", raw: b }
      },
      "text",
    )
    return { role, shell, parts }
  },

  compose: composeContent,

  withId(part, id) {
    return { ...(part.raw as Message), toolCallId: id }
  },

  // AI SDK 4 results use `result` + `isError`; 5 and later use a typed `output`. Match the transcript.
  synthetic(call, sample, text) {
    let legacy = legacyStyle.get(sample)
    if (legacy === undefined) {
      legacy = sample.some((d) =>
        d.parts.some(
          (p) => p.kind === "result" && isRecord(p.raw) && "result" in p.raw && !("output" in p.raw),
        ),
      )
      legacyStyle.set(sample, legacy)
    }
    const base = { type: "tool-result", toolCallId: call.id, toolName: call.name ?? "unknown" }
    return {
      kind: "result",
      id: call.id,
      isError: true,
      raw: legacy
        ? { ...base, result: text, isError: true }
        : { ...base, output: { type: "error-text", value: text } },
    }
  },

  argumentsProblem(part) {
    const raw = part.raw as Record<string, unknown>
    const field = argsField(raw)
    return objectArgumentsProblem(raw[field], field)
  },

  rawArguments(part) {
    const raw = part.raw as Record<string, unknown>
    return raw[argsField(raw)]
  },

  withEmptyArguments(part) {
    const raw = part.raw as Record<string, unknown>
    return { ...raw, [argsField(raw)]: {} }
  },

  // generateText and streamText resolve approvals from the last message alone, when it is a tool message: each
  // approved call runs, each denied one gets an execution-denied result, and a call answered there is skipped.
  answeredByClient(nodes) {
    const asked = new Map<unknown, unknown>()
    const ids = new Set<unknown>()
    for (const d of nodes)
      for (const { raw: b } of d.parts)
        if (isRecord(b))
          if (b.type === "tool-approval-request") asked.set(b.approvalId, b.toolCallId)
          else if (b.type === "tool-approval-response" && d === nodes.at(-1) && d.role === "tool")
            ids.add(asked.get(b.approvalId))
    return ids
  },

  // AI SDK providers differ on empty turns, so none is flagged here.
  isEmpty: () => false,

  check: () => [],
  fix: (m) => m,
}
