// The original's request-id precedence for tasks (reference §3.1), so a Python and a TypeScript worker dedupe
// the same task under the same id.
import { type JsonValue, sha256Hex } from "../ledger/index.ts"
import { pythonDumps, pythonNumber } from "../python-json.ts"

export interface TaskIdentityInput {
  readonly task: string
  readonly args?: readonly JsonValue[]
  readonly kwargs: Readonly<Record<string, JsonValue>>
  readonly idFrom?: readonly string[] | null
}

/** Python's `str(v)` for the JSON values an id can be built from. */
function pyStr(v: JsonValue): string {
  if (typeof v === "string") return v
  if (typeof v === "number") return pythonNumber(v)
  if (typeof v === "boolean") return v ? "True" : "False"
  if (v === null) return "None"
  return pythonDumps(v)
}

/**
 * 1. `task_id` verbatim (not prefixed by the task name, as in the original); 2. `{task}:{run_id}`;
 * 3. `{task}:f1=v1:f2=v2` from the `idFrom` fields present; 4. `{task}:` + 16 hex of SHA-256 over
 * `json.dumps({"args": args, "kwargs": kwargs}, sort_keys=True)`.
 */
export function deriveTaskRequestId(input: TaskIdentityInput): string {
  const { task, kwargs } = input
  const taskId = kwargs.task_id
  if (taskId !== undefined && taskId !== null) return pyStr(taskId)
  const runId = kwargs.run_id
  if (runId !== undefined && runId !== null) return `${task}:${pyStr(runId)}`
  const present = (input.idFrom ?? []).filter((f) => f in kwargs)
  if (present.length)
    return `${task}:${present.map((f) => `${f}=${pyStr(kwargs[f] as JsonValue)}`).join(":")}`
  const digest = sha256Hex(pythonDumps({ args: input.args ?? [], kwargs }, { sortKeys: true }))
  return `${task}:${digest.slice(0, 16)}`
}
