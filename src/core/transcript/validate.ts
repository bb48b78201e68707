import { hasCycle, isRecord } from "./clone.ts"
import type { FormatAdapter } from "./formats/adapter.ts"
import { blockOf, hasCalls, type Node, toNodes } from "./nodes.ts"
import type { TranscriptIssue } from "./types.ts"

export interface FindIssuesOptions {
  strictRoles: boolean
  allowPendingToolCalls: boolean
}

export const CYCLE = "holds a cycle (an object inside itself)"

/** Every problem in the transcript, ordered by message index. */
export function findIssues(
  messages: readonly unknown[],
  adapter: FormatAdapter,
  options: FindIssuesOptions,
): TranscriptIssue[] {
  const issues: TranscriptIssue[] = []
  // A hole (`delete messages[i]`) becomes undefined, reported as not an object; map() left holes in the nodes.
  const nodes = toNodes(Array.from(messages), adapter)
  const allCallIds = new Set<string>()
  for (const n of nodes) for (const p of n.parts) if (p.kind === "call" && p.id) allCallIds.add(p.id)

  for (const [i, m] of messages.entries()) {
    if (!isRecord(m)) {
      issues.push({ violation: "invalid_message", messageIndex: i, reason: `Message ${i} is not an object.` })
      continue
    }
    if (hasCycle(m))
      issues.push({ violation: "invalid_message", messageIndex: i, reason: `Message ${i} ${CYCLE}.` })
    const role = nodes[i]?.role ?? ""
    if (options.strictRoles && !adapter.roles.has(role)) {
      issues.push({
        violation: "invalid_role",
        messageIndex: i,
        reason: `Message ${i} has invalid role '${role}'. Expected one of [${[...adapter.roles].sort().join(", ")}].`,
      })
    }
    if (adapter.isEmpty(m, i === messages.length - 1)) {
      issues.push({
        violation: "empty_message",
        messageIndex: i,
        reason: `Message ${i} has no content; ${adapter.format} refuses empty ${role} messages.`,
      })
    }
    issues.push(...adapter.check(m, i))
    let callIndex = 0
    for (const p of nodes[i]?.parts ?? []) {
      if (p.kind === "call") {
        const problem = adapter.argumentsProblem(p)
        if (problem) {
          issues.push({
            violation: "invalid_tool_arguments",
            messageIndex: i,
            callIndex,
            ...(p.id ? { toolCallId: p.id } : {}),
            reason: `Message ${i}, tool call ${callIndex}${p.id ? ` (id '${p.id}')` : ""}: ${problem}; providers require the arguments to be a JSON object.`,
          })
        }
        callIndex++
      }
      if (p.kind !== "other" && !p.id) {
        const what = p.kind === "call" ? "a tool call" : "a tool result"
        issues.push({
          violation: "missing_tool_call_id",
          messageIndex: i,
          reason: `Message ${i} has ${what} without an id.`,
        })
      }
    }
  }

  // Where each call id's results sit, last first, so a missing result can say it exists elsewhere.
  const resultsAt = new Map<string, number[]>()
  for (const n of [...nodes].reverse())
    for (const p of n.parts)
      if (p.kind === "result" && p.id) {
        const at = resultsAt.get(p.id)
        if (at) at.push(n.index)
        else resultsAt.set(p.id, [n.index])
      }
  const seen = new Set<string>()
  const byClient = adapter.answeredByClient?.(nodes)
  const inBlock = new Set<number>()
  const stray = (i: number, id: string): TranscriptIssue =>
    allCallIds.has(id)
      ? {
          violation: "misplaced_tool_result",
          messageIndex: i,
          toolCallId: id,
          reason:
            nodes[i]?.role === adapter.carrierRole
              ? `Message ${i} answers tool call '${id}' away from the message that made it.`
              : `Message ${i} carries the result of tool call '${id}' in a '${nodes[i]?.role}' message; ${adapter.format} tool results belong in a '${adapter.carrierRole}' message right after the call.`,
        }
      : {
          violation: "orphaned_tool_result",
          messageIndex: i,
          toolCallId: id,
          reason: `Message ${i} has tool_call_id='${id}' with no matching preceding assistant tool_call.`,
        }

  for (const node of nodes) {
    const i = node.index
    const ids: string[] = []
    const idSet = new Set<string>()
    for (const p of node.parts) {
      if (p.kind !== "call" || !p.id) continue
      if (seen.has(p.id)) {
        issues.push({
          violation: "duplicate_tool_call_ids",
          messageIndex: i,
          toolCallId: p.id,
          reason: `Message ${i} reuses tool call id '${p.id}'.`,
        })
      }
      seen.add(p.id)
      ids.push(p.id)
      idSet.add(p.id)
    }
    if (!hasCalls(node)) continue
    const block = blockOf(nodes, i, adapter)
    const answered = new Set<string>()
    for (const j of block) {
      inBlock.add(j)
      let sawOther = false
      for (const p of (nodes[j] as Node).parts) {
        if (p.kind === "other") sawOther = true
        if (p.kind !== "result" || !p.id) continue
        if (adapter.blockShape === "single" && sawOther) {
          issues.push({
            violation: "misplaced_tool_result",
            messageIndex: j,
            toolCallId: p.id,
            reason: `Message ${j} has a tool result after other content; results must come first.`,
          })
        }
        if (!idSet.has(p.id)) issues.push(stray(j, p.id))
        else if (answered.has(p.id)) {
          issues.push({
            violation: "duplicate_tool_result",
            messageIndex: j,
            toolCallId: p.id,
            reason: `Message ${j} answers tool call '${p.id}' a second time.`,
          })
        } else answered.add(p.id)
      }
    }
    const pending = options.allowPendingToolCalls && block.length === 0 && i === nodes.length - 1
    if (pending) continue
    const toEnd = block.at(-1) === nodes.length - 1
    for (const id of ids) {
      if (answered.has(id) || (toEnd && byClient?.has(id))) continue
      // Messages come in order: the results before this one are done with (find() from the first, per call, was
      // quadratic in a model that names every call call_0).
      const after = resultsAt.get(id) ?? []
      while ((after.at(-1) ?? i) < i) after.pop()
      const elsewhere = after.at(-1)
      issues.push({
        violation: "missing_tool_result",
        messageIndex: i,
        toolCallId: id,
        reason:
          elsewhere === undefined
            ? `Message ${i} has tool call '${id}' with no result right after it (tool_use ids were found without tool_result blocks).`
            : `Message ${i} has tool call '${id}' whose result is in message ${elsewhere} instead of right after it; repair() moves it there.`,
      })
    }
  }

  for (const node of nodes) {
    if (inBlock.has(node.index)) continue
    for (const p of node.parts) if (p.kind === "result" && p.id) issues.push(stray(node.index, p.id))
  }
  return issues.sort((a, b) => a.messageIndex - b.messageIndex)
}
