// What a replayed LangGraph tool call returns. The ledger stores a result as JSON, so a replay hands back the first
// run's `Command` or message as a plain object: ToolNode would send its JSON text to the model as the tool's answer
// and drop the state update. Both get their class back here. The framework is imported only when a replayed result
// needs it; a graph that returned one has it installed.
//
// What a tool returns is often data it did not write (model text, a provider's JSON). Data shaped like a Command
// or like LangChain's serialization must stay data: the unguarded tool would hand it to ToolNode as text, and
// `load()` must never instantiate a class or look up a secret from it. So everything plain that a result carries is
// escaped when stored (LangChain's own `{ __lc_escaped__: ... }`, which `load()` unwraps without reviving), and only
// what a class instance serialized itself is revived.

import { GuardedToolError } from "./errors.ts"

const ESCAPED = "__lc_escaped__"

/** A `Command` as stored: `{ lg_name: "Command", update, goto, resume, graph }`, its data escaped. */
export function isCommandJson(v: unknown): v is Record<string, unknown> {
  return isPlainObject(v) && v.lg_name === "Command"
}

/**
 * What the ledger stores for a tool's result. A `Command` is stored as its JSON plus `graph` (`Command.toJSON()`
 * leaves it out, so a handoff to the parent graph would replay as a jump inside the tool's own graph) and the id of
 * the tool call it answered, with the plain data of its `update`, `resume` and sends escaped. Plain data that could
 * pass for a Command or a serialized LangChain object is escaped as a whole. (LangGraph's own test for a Command: a
 * class instance named Command.)
 */
export function storableResult(v: unknown, toolCallId?: string): unknown {
  if (typeof v !== "object" || v === null) return v
  if (isPlainObject(v)) return needsEscape(v) || v.lg_name === "Command" ? { [ESCAPED]: v } : v
  const cmd = v as { lg_name?: unknown; graph?: unknown; update?: unknown; resume?: unknown; goto?: unknown }
  if (cmd.lg_name !== "Command") return v
  const json: Record<string, unknown> = {
    lg_name: "Command",
    update: escapeData(cmd.update),
    resume: escapeData(cmd.resume),
    goto: escapeData(cmd.goto),
  }
  if (cmd.graph !== undefined) json.graph = cmd.graph
  if (toolCallId) json.tool_call_id = toolCallId
  return JSON.parse(JSON.stringify(json))
}

/** `load()`'s rule: an object with an `lc` key, or one that is only the escape key, would be read as LangChain's. */
function needsEscape(o: Record<string, unknown>): boolean {
  const keys = Object.keys(o)
  return "lc" in o || (keys.length === 1 && keys[0] === ESCAPED)
}

/**
 * Escapes the plain objects of `v` that `load()` would take for LangChain's; class instances are left to their own
 * `toJSON()` (a message escapes its own fields), except a `Send`, whose `args` are data.
 */
function escapeData(v: unknown, path = new WeakSet<object>()): unknown {
  if (typeof v !== "object" || v === null) return v
  // A cycle: left as it is, JSON.stringify reports it the way the ledger reports any result it cannot store.
  if (path.has(v)) return v
  path.add(v)
  let out: unknown = v
  if (Array.isArray(v)) out = v.map((x) => escapeData(x, path))
  else if (isPlainObject(v)) {
    out = needsEscape(v)
      ? { [ESCAPED]: v }
      : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, escapeData(x, path)]))
  } else {
    const send = v as { lg_name?: unknown; node?: unknown; args?: unknown; timeout?: unknown }
    if (send.lg_name === "Send") {
      out = { lg_name: "Send", node: send.node, args: escapeData(send.args, path), timeout: send.timeout }
    }
  }
  path.delete(v)
  return out
}

/** A LangChain serializable (a message, a document) as JSON: `{ lc: 1, type: "constructor", id, kwargs }`. */
function isSerializedJson(v: unknown): boolean {
  return isPlainObject(v) && v.lc === 1 && v.type === "constructor" && Array.isArray(v.id)
}

function isEscaped(v: unknown): v is Record<typeof ESCAPED, unknown> {
  return isPlainObject(v) && Object.keys(v).length === 1 && ESCAPED in v
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/**
 * The result as the first run returned it: a `Command` (its `update`, `resume` and sends revived by LangChain's
 * `load()`, which unwraps escaped data), a serialized message, or escaped data unwrapped; anything else as stored.
 * Replayed for another tool call (`toolCallId`), the messages that answered the first call answer this one.
 */
export async function reviveReplayed(stored: unknown, toolCallId?: string): Promise<unknown> {
  if (isEscaped(stored)) return stored[ESCAPED]
  if (isCommandJson(stored)) {
    const [{ Command }, { load }] = await framework(() =>
      Promise.all([import("@langchain/langgraph"), import("@langchain/core/load")]),
    )
    // load()'s default depth cap (50) guards against hostile input; this is the ledger's own, escaped, and the
    // store already held it: a deep state update must not fail a call whose effect ran.
    // Plain JSON with no LangChain object and nothing escaped is already what load() would return (load() walks a
    // 5 MB update for over a second).
    const revive = (v: unknown) => {
      const text = v === undefined ? undefined : JSON.stringify(v)
      if (text === undefined || (!text.includes('"lc"') && !text.includes(ESCAPED))) return v
      return load(text, { maxDepth: Number.POSITIVE_INFINITY })
    }
    const { lg_name: _name, update, resume, goto, tool_call_id: from, ...rest } = stored
    const [u, r, g] = await Promise.all([revive(update), revive(resume), revive(goto)])
    // An update is `{ key: value }` or a list of `[key, value]` pairs; a value is a message or a list of them.
    const answered = isPlainObject(u)
      ? Object.fromEntries(Object.entries(u).map(([k, v]) => [k, reanswer(v, from, toolCallId)]))
      : reanswer(u, from, toolCallId)
    const args = { ...rest, update: answered, resume: r, ...(g === undefined ? {} : { goto: g }) }
    return new Command(args as ConstructorParameters<typeof Command>[0])
  }
  if (isSerializedJson(stored)) {
    const { load } = await framework(() => import("@langchain/core/load"))
    const message: unknown = await load(JSON.stringify(stored))
    return reanswer(message, (message as { tool_call_id?: unknown }).tool_call_id, toolCallId)
  }
  return stored
}

/**
 * A replay under another tool-call id (a `requestIdFrom` key, a model's retry held by its failed call) must answer
 * that call: ToolNode passes a ToolMessage or Command on as it is, and one still answering the first call left this
 * call unanswered (the provider refuses the next step) and answered the first twice. The message gets no message id
 * of its own: the messages reducer would put it in place of the first answer.
 */
function reanswer(v: unknown, from: unknown, to: string | undefined): unknown {
  if (Array.isArray(v)) return v.map((x) => reanswer(x, from, to))
  const m = v as { tool_call_id?: unknown; id?: unknown; type?: unknown; role?: unknown } | null
  if (typeof from !== "string" || !to || from === to || m?.tool_call_id !== from) return v
  // Only a tool message changes hands: other state data that names the call keeps its own id.
  if (m.type !== "tool" && m.role !== "tool") return v
  // A plain message-like is the stored row's; one LangChain revived is this replay's own.
  const out = isPlainObject(m) ? { ...m } : m
  out.tool_call_id = to
  out.id = undefined
  return out
}

/**
 * The application's LangGraph / LangChain, or a typed error: the ledger holds a Command or a message for this call
 * (a first run in a process that had them), and this process, without them, cannot hand it back as one.
 */
async function framework<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (cause) {
    throw new GuardedToolError(
      "langgraph_not_installed",
      "The ledger holds a LangGraph Command or LangChain message as this call's result, and @langchain/langgraph or " +
        "@langchain/core/load cannot be imported here: install @langchain/langgraph and @langchain/core in the " +
        "application that replays LangGraph tool calls.",
      { cause },
    )
  }
}
