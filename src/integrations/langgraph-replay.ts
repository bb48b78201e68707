// What a replayed LangGraph tool call returns. The ledger stores a result as JSON, so a replay hands back the first
// run's `Command` or message as a plain object: ToolNode would send its JSON text to the model as the tool's answer
// and drop the state update. Both get their class back here. The framework is imported only when a replayed result
// needs it; a graph that returned one has it installed.

/** A `Command` as JSON: `{ lg_name: "Command", update, goto, resume, graph }`. */
export function isCommandJson(v: unknown): v is Record<string, unknown> {
  return isPlainObject(v) && v.lg_name === "Command"
}

/**
 * What the ledger stores for a tool's result. `Command.toJSON()` leaves out `graph`, so a handoff to the parent
 * graph (`graph: Command.PARENT`, as handoff tools return) would replay as a jump inside the tool's own graph:
 * a Command is stored as its JSON plus `graph`. (LangGraph's own test: a class instance named Command.)
 */
export function storableResult(v: unknown): unknown {
  if (typeof v !== "object" || v === null || isPlainObject(v)) return v
  const cmd = v as { lg_name?: unknown; graph?: unknown }
  if (cmd.lg_name !== "Command") return v
  const json = JSON.parse(JSON.stringify(v)) as Record<string, unknown>
  return cmd.graph === undefined ? json : { ...json, graph: cmd.graph }
}

/** A LangChain serializable (a message, a document) as JSON: `{ lc: 1, type: "constructor", id, kwargs }`. */
function isSerializedJson(v: unknown): boolean {
  return isPlainObject(v) && v.lc === 1 && v.type === "constructor" && Array.isArray(v.id)
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/**
 * The replayed result as the first run returned it: a `Command` (its `update` revived by LangChain's `load()`, its
 * `goto` sends by the `Command` constructor) or a serialized message; anything else as stored.
 */
export async function reviveReplayed(stored: unknown): Promise<unknown> {
  if (isCommandJson(stored)) {
    const [{ Command }, { load }] = await Promise.all([
      import("@langchain/langgraph"),
      import("@langchain/core/load"),
    ])
    const { lg_name: _name, update, ...rest } = stored
    const revived = update === undefined ? update : await load(JSON.stringify(update))
    return new Command({ ...rest, update: revived } as ConstructorParameters<typeof Command>[0])
  }
  if (isSerializedJson(stored)) {
    const { load } = await import("@langchain/core/load")
    return load(JSON.stringify(stored))
  }
  return stored
}
