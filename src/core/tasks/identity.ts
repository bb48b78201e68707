// The original's request-id precedence for tasks (reference §3.1), so a Python and a TypeScript worker dedupe
// the same task under the same id.
import { type JsonValue, sha256Hex } from "../ledger/index.ts"
import { pythonDumps } from "../python-json.ts"
import { pyStrRepr } from "../repr.ts"
import { TaskIdAmbiguousError } from "./errors.ts"

export interface TaskIdentityInput {
  readonly task: string
  readonly args?: readonly JsonValue[]
  readonly kwargs: Readonly<Record<string, JsonValue>>
  readonly idFrom?: readonly string[] | null
}

/** Python's `str(v)` for the JSON values an id can be built from. */
function pyStr(v: JsonValue): string {
  return typeof v === "string" ? v : idRepr(v)
}

/**
 * Python's `repr(v)`, which `str()` of a list or dict uses for its items: `{'a': [True, None]}`, not JSON, so an
 * `id_from` field holding one gives the original's id. Not repr.ts's `pyRepr`, which renders messages: it shows
 * null as `null`, numbers as JavaScript prints them and cuts nesting at depth 4; an id must be exact.
 */
function idRepr(v: JsonValue): string {
  if (typeof v === "string") return pyStrRepr(v)
  if (typeof v === "boolean") return v ? "True" : "False"
  if (v === null) return "None"
  if (Array.isArray(v)) return `[${v.map(idRepr).join(", ")}]`
  if (typeof v === "object" && !(v instanceof Number))
    return `{${Object.entries(v)
      .map(([k, x]) => `${pyStrRepr(k)}: ${idRepr(x)}`)
      .join(", ")}}`
  // Numbers (an int, a float kept as one, a bigint) print as in JSON.
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
