// The original's request-id precedence for tasks (reference §3.1), so a Python and a TypeScript worker dedupe
// the same task under the same id.
import { type JsonValue, sha256Hex } from "../ledger/index.ts"
import { pythonDumps, pythonNumber } from "../python-json.ts"
import { TaskIdAmbiguousError } from "./errors.ts"

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
  const idFrom = input.idFrom ?? []
  const present = idFrom.filter((f) => Object.hasOwn(kwargs, f))
  if (present.length) {
    const values = present.map((f) => pyStr(kwargs[f] as JsonValue))
    // The original joins `f=v` pairs with ':' unescaped, so a value holding ':<field>=' forges another argument
    // set's id ({region: "eu:day=d"} and {region: "eu", day: "d"} both give "t:region=eu:day=d") and would get
    // that task's stored result. Such a value is refused; every id that is derived is still the original's.
    values.forEach((v, i) => {
      const forged = idFrom.find((g) => v.includes(`:${g}=`))
      if (forged !== undefined)
        throw new TaskIdAmbiguousError(
          `Task '${task}': the value of id_from field '${present[i]}' contains ':${forged}=', which would make its ` +
            "request id the same as another argument set's. Pass a value without it, or a task_id.",
        )
    })
    return `${task}:${present.map((f, i) => `${f}=${values[i]}`).join(":")}`
  }
  const digest = sha256Hex(pythonDumps({ args: input.args ?? [], kwargs }, { sortKeys: true }))
  return `${task}:${digest.slice(0, 16)}`
}
