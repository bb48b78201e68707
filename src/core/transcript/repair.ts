import { safeString } from "../repr.ts"
import { clonePlain, hasCycle, isRecord } from "./clone.ts"
import { MessageValidationError } from "./errors.ts"
import type { FormatAdapter, Part } from "./formats/adapter.ts"
import { interruptedResultText } from "./interrupted.ts"
import { invalidArgumentsResultText } from "./invalid-arguments.ts"
import { blockOf, blockOwners, hasCalls, type Node, toNodes } from "./nodes.ts"
import type { Message, RepairAction, Violation } from "./types.ts"
import { CYCLE, findIssues } from "./validate.ts"

export interface RepairOptions {
  strictRoles: boolean
  allowPendingToolCalls: boolean
  invalidMessages: "throw" | "drop"
}

interface CallRec {
  node: number
  /** The call as decomposed from the input. */
  source: Part
  /** The call as it is emitted (arguments replaced when they were invalid). */
  part: Part
  origId: string | undefined
  id: string
  /** Why the arguments as sent were not a JSON object; `part` then carries `{}` instead. */
  invalid?: { problem: string; raw: unknown }
  result?: ResultRec
}

interface ResultRec {
  node: number
  pos: number
  part: Part
}

// The fields the format adapters read. check() reads them from a class's prototype too (a getter): so does repair.
const READ = ["role", "content", "tool_calls", "tool_call_id", "parsed", "refusal", "function_call", "audio"]

function withReadFields(m: Record<string, unknown>): Record<string, unknown> {
  const own = { ...m }
  for (const k of READ) if (k in m && !(k in own)) own[k] = m[k]
  return own
}

/**
 * Rebuilds the transcript so every tool call is answered exactly once by the block right after it: ids are
 * made unique, results are assigned to their call (the block's own call first, then the nearest earlier
 * unanswered one, then a later one) and moved there, orphans and duplicates are dropped, and calls left
 * unanswered get a synthetic "interrupted" result. Results in a role the format does not allow them in are
 * moved the same way. Calls whose arguments are not a JSON object get `{}` instead and are always closed
 * (by their real result, or else an error result quoting what was sent), so nothing can run the `{}`.
 */
export function repairTranscript(
  input: readonly unknown[],
  adapter: FormatAdapter,
  options: RepairOptions,
): { messages: Message[]; actions: RepairAction[] } {
  const actions: RepairAction[] = []
  const kept: Message[] = []
  const origin: number[] = []
  for (const [i, m] of input.entries()) {
    // The message's own fields, whatever its class: fix() edits this copy, never the caller's (maybe frozen) object.
    const own = isRecord(m) ? withReadFields(m) : undefined
    const role = own?.role
    // A cycle is refused before clonePlain, which would copy it forever.
    const problem: [Violation, string] | undefined = !own
      ? ["invalid_message", "is not an object"]
      : hasCycle(m)
        ? ["invalid_message", CYCLE]
        : options.strictRoles && !(typeof role === "string" && adapter.roles.has(role))
          ? ["invalid_role", `has invalid role '${safeString(role ?? "")}'`]
          : undefined
    if (problem) {
      const [violation, bad] = problem
      if (options.invalidMessages === "throw") {
        throw new MessageValidationError(
          `Message ${i} ${bad}; repair() cannot infer what it should be. Fix it or pass { invalidMessages: "drop" }.`,
          { violation, messageIndex: i },
        )
      }
      actions.push({ kind: "dropped_invalid_message", messageIndex: i, detail: bad })
      continue
    }
    const fixed = adapter.fix(clonePlain(own as Message), i, actions)
    const { shell, parts } = adapter.decompose(fixed)
    // Nothing to keep: the provider refuses the turn and it says nothing, or it has no content to rebuild it from
    // (AI SDK `null`, Anthropic's final `[]`), which check() lets pass but compose() cannot give back.
    if (adapter.isEmpty(fixed, i === input.length - 1) || !(parts.length || adapter.compose(shell, []))) {
      actions.push({ kind: "dropped_empty_message", messageIndex: i })
      continue
    }
    kept.push(fixed)
    origin.push(i)
  }
  const nodes = toNodes(kept, adapter)
  const at = (k: number): number => origin[k] ?? k

  // Ids: unique across the transcript, renamed deterministically (<id>_dup<N>) in order of appearance.
  const used = new Set<string>()
  for (const n of nodes) for (const p of n.parts) if (p.kind === "call" && p.id) used.add(p.id)
  // Where the search for a free `<base><n>` resumes: a model that names every call "call_0" would otherwise
  // make each rename scan all the earlier ones.
  const nextFree = new Map<string, number>()
  const unique = (base: string, first: number): string => {
    for (let n = Math.max(first, nextFree.get(base) ?? 0); ; n++) {
      const id = first === 0 && n === 0 ? base : `${base}${n}`
      if (!used.has(id)) {
        used.add(id)
        nextFree.set(base, n + 1)
        return id
      }
    }
  }
  const seen = new Set<string>()
  const calls: CallRec[] = []
  const byNode = new Map<number, CallRec[]>()
  for (const n of nodes) {
    for (const [pos, p] of n.parts.entries()) {
      if (p.kind !== "call") continue
      let id = p.id
      if (!id) {
        id = unique(`${adapter.idPrefix}${at(n.index)}_${pos}`, 0)
        actions.push({ kind: "assigned_missing_call_id", messageIndex: at(n.index), toolCallId: id })
      } else if (seen.has(id)) {
        const renamed = unique(`${id}_dup`, 1)
        actions.push({
          kind: "renamed_duplicate_call_id",
          messageIndex: at(n.index),
          toolCallId: renamed,
          detail: `was ${id}`,
        })
        id = renamed
      }
      seen.add(id)
      const rec: CallRec = { node: n.index, source: p, part: p, origId: p.id, id }
      const problem = adapter.argumentsProblem(p)
      if (problem) {
        rec.invalid = { problem, raw: adapter.rawArguments(p) }
        rec.part = { ...p, raw: adapter.withEmptyArguments(p) }
        actions.push({
          kind: "replaced_invalid_arguments",
          messageIndex: at(n.index),
          toolCallId: id,
          detail: problem,
        })
      }
      calls.push(rec)
      const mine = byNode.get(n.index)
      if (mine) mine.push(rec)
      else byNode.set(n.index, [rec])
    }
  }

  assignResults(nodes, calls, adapter, actions, at)

  const build = (pendingNode: number | undefined) => rebuild(nodes, byNode, adapter, pendingNode, at)
  let pendingNode: number | undefined
  if (options.allowPendingToolCalls) {
    const last = [...nodes].reverse().find((n) => hasCalls(n))
    const recs = last ? (byNode.get(last.index) ?? []) : []
    if (last && recs.every((c) => !c.result && !c.invalid)) pendingNode = last.index
  }
  let out = build(pendingNode)
  if (
    pendingNode !== undefined &&
    findIssues(out.messages, adapter, { strictRoles: false, allowPendingToolCalls: true }).length > 0
  ) {
    out = build(undefined)
  }
  actions.push(...out.actions)
  return { messages: out.messages, actions }
}

function assignResults(
  nodes: readonly Node[],
  calls: CallRec[],
  adapter: FormatAdapter,
  actions: RepairAction[],
  at: (k: number) => number,
): void {
  // Calls by their id as sent, in transcript order, and by message and id, last first: a lookup per result, not a
  // scan of every call. A model may send one id for every call, so each search resumes where the last one stopped
  // (filtering every call sharing the id, per result, was quadratic: 32,000 calls named call_0 took 24 s): messages
  // are read in order, and a call once answered stays answered.
  const byOrigId = new Map<string, CallRec[]>()
  const mine = new Map<string, CallRec[]>()
  const add = (m: Map<string, CallRec[]>, k: string, c: CallRec) => {
    const same = m.get(k)
    if (same) same.push(c)
    else m.set(k, [c])
  }
  for (const c of [...calls].reverse()) {
    if (c.origId === undefined) continue
    add(byOrigId, c.origId, c)
    add(mine, `${c.node} ${c.origId}`, c)
  }
  const searches = new Map([...byOrigId].map(([id, all]) => [id, searchOf(all.reverse())]))
  const owners = blockOwners(nodes, adapter)
  for (const n of nodes) {
    for (const [pos, p] of n.parts.entries()) {
      if (p.kind !== "result") continue
      const r: ResultRec = { node: n.index, pos, part: p }
      const search = p.id ? searches.get(p.id) : undefined
      if (!search) {
        actions.push({
          kind: "dropped_orphan_result",
          messageIndex: at(n.index),
          ...(p.id ? { toolCallId: p.id } : {}),
        })
        continue
      }
      // A result in the wrong role has no owner: wherever it goes, it moves.
      const owner = p.misplaced ? undefined : owners[n.index]
      // The block's own call first (the first open one that message made with this id), then the nearest earlier
      // unanswered one, then a later one.
      const own = mine.get(`${owner} ${p.id}`)
      while (own?.at(-1)?.result) own.pop()
      const [open, call] = search(n.index)
      const target = own?.at(-1) ?? open
      if (target) {
        target.result = r
        if (target.node !== owner) {
          actions.push({
            kind: "moved_tool_result",
            messageIndex: at(n.index),
            toolCallId: target.id,
            detail: `moved after message ${at(target.node)}`,
          })
        }
        continue
      }
      // Every call with this id is answered: keep one result, preferring a real one over an error (an
      // "aborted" placeholder followed by the real result), else the later one.
      const prev = call.result as ResultRec
      const replace = prev.part.isError || !p.isError
      if (replace) call.result = r
      const dropped = replace ? prev : r
      actions.push({ kind: "dropped_duplicate_result", messageIndex: at(dropped.node), toolCallId: call.id })
    }
  }
}

/**
 * For the calls sent with one id, in order: at message n, the nearest open call at or before it, else the first open
 * one after it; and the last call at or before n. Read with n rising, each call is passed over once: the earlier ones
 * wait on a stack, from whose top the answered ones leave.
 */
function searchOf(all: CallRec[]): (n: number) => [CallRec | undefined, CallRec] {
  const stack: CallRec[] = []
  let seen = 0
  let ahead = 0
  return (n) => {
    while ((all[seen]?.node ?? n + 1) <= n) stack.push(all[seen++] as CallRec)
    while (stack.at(-1)?.result) stack.pop()
    for (ahead = Math.max(ahead, seen); all[ahead]?.result; ) ahead++
    return [stack.at(-1) ?? all[ahead], all[seen - 1] ?? (all[0] as CallRec)]
  }
}

function rebuild(
  nodes: readonly Node[],
  byNode: ReadonlyMap<number, CallRec[]>,
  adapter: FormatAdapter,
  pendingNode: number | undefined,
  at: (k: number) => number,
): { messages: Message[]; actions: RepairAction[] } {
  const out: Message[] = []
  const actions: RepairAction[] = []
  const othersDone = new Set<number>()
  const consumed = new Set<number>()
  const renamed = (c: CallRec): Part => ({ ...c.part, raw: adapter.withId(c.part, c.id) })
  const byClient = adapter.answeredByClient?.(nodes)
  const recOf = new Map<Part, CallRec>()
  for (const recs of byNode.values()) for (const c of recs) recOf.set(c.source, c)
  const closing = (c: CallRec): Part => {
    const name = c.part.name
    const text = c.invalid
      ? invalidArgumentsResultText(name, c.id, c.invalid.problem, c.invalid.raw)
      : interruptedResultText(name, c.id)
    actions.push({
      kind: c.invalid ? "inserted_invalid_arguments_result" : "inserted_interrupted_result",
      messageIndex: at(c.node),
      toolCallId: c.id,
    })
    return adapter.synthetic({ id: c.id, name }, nodes, text)
  }
  const push = (m: Message | null) => {
    if (m) out.push(m)
  }

  for (const node of nodes) {
    if (consumed.has(node.index)) continue
    const recs = byNode.get(node.index) ?? []
    const own = node.parts
      .filter((p) => p.kind === "call" || (p.kind === "other" && !othersDone.has(node.index)))
      .map((p) => (p.kind === "call" ? renamed(recOf.get(p) as CallRec) : p))
    othersDone.add(node.index)
    push(adapter.compose(node.shell, own))
    if (recs.length === 0 || node.index === pendingNode) continue

    const real = recs
      .filter((c) => c.result)
      .map((c) => ({
        r: c.result as ResultRec,
        part: { ...(c.result as ResultRec).part, raw: adapter.withId((c.result as ResultRec).part, c.id) },
      }))
      .sort((a, b) => a.r.node - b.r.node || a.r.pos - b.r.pos)
    const block = blockOf(nodes, node.index, adapter)
    // The client answers these from the last message (see answeredByClient), so no result is added for them, and
    // that message stays last, the only one the client reads. The results we do add go into it: there the client
    // sees those calls answered (one with invalid arguments may carry an approval) and leaves them alone.
    const tail = byClient?.size && block.at(-1) === nodes.length - 1 ? block.at(-1) : undefined
    const synth = recs.filter((c) => !c.result && !(tail && !c.invalid && byClient?.has(c.id))).map(closing)

    if (adapter.blockShape === "per-result") {
      for (const p of [...real.map((x) => x.part), ...synth])
        push(adapter.compose({ role: adapter.carrierRole }, [p]))
    } else if (adapter.blockShape === "grouped") {
      const mine = new Map<number, Map<number, Part>>()
      for (const x of real) mine.set(x.r.node, (mine.get(x.r.node) ?? new Map()).set(x.r.pos, x.part))
      const emit = (src: number, extra: Part[]) => {
        const origin = nodes[src] as Node
        const own = mine.get(src) ?? new Map<number, Part>()
        // Results moved out of another role get a message of their own; that message keeps its content.
        if (origin.role !== adapter.carrierRole)
          return push(adapter.compose({ role: adapter.carrierRole }, [...own.values()]))
        const parts = origin.parts.flatMap((p, pos): Part[] =>
          own.has(pos) ? [own.get(pos) as Part] : p.kind === "other" && !othersDone.has(src) ? [p] : [],
        )
        othersDone.add(src)
        push(adapter.compose(origin.shell, [...parts, ...extra]))
      }
      // The block's messages keep their order, those without results too (an AI SDK approval response).
      // Sorted, the transcript's last message comes last.
      for (const src of [...new Set([...mine.keys(), ...block])].sort((a, b) => a - b))
        emit(src, src === tail ? synth : [])
      if (!tail && synth.length > 0) push(adapter.compose({ role: adapter.carrierRole }, synth))
    } else {
      const next = nodes[node.index + 1]
      const base = next && next.role === adapter.carrierRole && !consumed.has(next.index) ? next : undefined
      let others: Part[] = []
      if (base) {
        others = othersDone.has(base.index) ? [] : base.parts.filter((p) => p.kind === "other")
        // Any result kept from this message that sat after other content moves ahead of it.
        const firstOther = base.parts.findIndex((p) => p.kind === "other")
        if (others.length > 0 && real.some((x) => x.r.node === base.index && x.r.pos > firstOther)) {
          actions.push({
            kind: "moved_tool_result",
            messageIndex: at(base.index),
            detail: "tool results moved before other content",
          })
        }
        consumed.add(base.index)
        othersDone.add(base.index)
      }
      push(
        adapter.compose(base ? base.shell : { role: adapter.carrierRole }, [
          ...real.map((x) => x.part),
          ...synth,
          ...others,
        ]),
      )
    }
  }
  return { messages: out, actions }
}
