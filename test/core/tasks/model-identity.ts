// The task model's own request ids (model-world.ts), written from docs/tasks.md ("Request id") for the arguments the
// model sends, not from src: task_id verbatim, `{task}:{run_id}`, the idFrom fields as Python's str() writes them,
// else 16 hex of SHA-256 over Python's json.dumps({"args": [], "kwargs": ...}, sort_keys=True).
import { createHash } from "node:crypto"

export type Value = string | number | boolean | null
export type Args = Record<string, Value>

/** Python's str() of a value the model sends. */
const pyStr = (v: Value): string =>
  typeof v === "string"
    ? v
    : v === null
      ? "None"
      : typeof v === "boolean"
        ? v
          ? "True"
          : "False"
        : String(v)

/** Python's json.dumps of a string: ASCII only (ensure_ascii), lowercase \u escapes. */
const pyJsonString = (s: string): string =>
  JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

const pyJson = (v: Value): string =>
  typeof v === "string"
    ? pyJsonString(v)
    : v === null
      ? "null"
      : typeof v === "boolean"
        ? String(v)
        : String(v)

/** `json.dumps({"args": [], "kwargs": kwargs}, sort_keys=True)` for flat kwargs. */
export function pythonHashInput(kwargs: Args): string {
  const keys = Object.keys(kwargs).sort()
  const body = keys.map((k) => `${pyJsonString(k)}: ${pyJson(kwargs[k] as Value)}`).join(", ")
  return `{"args": [], "kwargs": {${body}}}`
}

export interface IdCall {
  readonly task: string
  readonly idFrom: readonly string[] | null
  readonly args: Args
  readonly taskId?: string
  readonly runId?: string
}

/** The request id the docs give a call, or "forged" when an idFrom value holds `:<field>=` (refused). */
export function modelRequestId(c: IdCall): string | "forged" {
  const taskId = c.taskId ?? c.args.task_id
  if (taskId !== undefined && taskId !== null) return pyStr(taskId)
  const runId = c.runId ?? c.args.run_id
  if (runId !== undefined && runId !== null) return `${c.task}:${pyStr(runId)}`
  const fields = (c.idFrom ?? []).filter((f) => f in c.args)
  if (fields.length) {
    const values = fields.map((f) => pyStr(c.args[f] as Value))
    if (values.some((v) => (c.idFrom ?? []).some((g) => v.includes(`:${g}=`)))) return "forged"
    return `${c.task}:${fields.map((f, i) => `${f}=${values[i]}`).join(":")}`
  }
  const kwargs = { ...c.args }
  if (c.taskId !== undefined) kwargs.task_id = c.taskId
  if (c.runId !== undefined) kwargs.run_id = c.runId
  return `${c.task}:${createHash("sha256").update(pythonHashInput(kwargs)).digest("hex").slice(0, 16)}`
}
