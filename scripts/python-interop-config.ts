// One mycelium.yaml, two implementations: the original's `load_config` (`cfg.apply_tool`, `apply_named_task`,
// `cfg.run`) and this package's `loadConfig` (`config.instrument`, `config.run`) take turns on the same stores (the
// action and task ledgers on the file, Redis or Postgres store under test; receipts and state snapshots in files),
// each replaying what the other wrote. Part of `npm run interop:python` (scripts/python-interop.ts).
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { FileReceiptStore } from "../src/adapters/file-receipts.ts"
import type { CallMeta, TransitionContext } from "../src/core/index.ts"
import { verifyReceipts } from "../src/core/receipts/index.ts"
import type { TaskCallMeta, TaskContext } from "../src/core/tasks/task-ledger.ts"
import { loadConfig } from "../src/node/config.ts"
import { type Outcome, outcomeOf, pythonEnv, type SharedStore } from "./python-interop-stores.ts"

type Side = "python" | "typescript"
type Meta = Partial<Record<"tool_call_id" | "request_id" | "thread_id" | "run_id" | "task_id", string>>
export interface Step {
  op: "tool" | "task" | "flush" | "resume" | "verify"
  name?: string
  args?: Record<string, unknown>
  meta?: Meta
  run?: string
  state?: Record<string, unknown>
  fail?: boolean
}
export type Check = (name: string, ok: boolean, detail: unknown) => void

const KEY_ENV = "MYCELIUM_INTEROP_KEY"
// The original reads the variable stripped (`os.environ[...].strip()`); a secret mounted from a file ends in one.
const KEY_VALUE = "interop-receipt-key\n"

const yamlFor = (
  dir: string,
  store: SharedStore,
): string => `# shared by the original and this package (scripts/python-interop-config.ts)
transition:
  agent_id: interop
  # Unquoted: PyYAML reads the float 1.0 ("1.0"), a YAML 1.2 parser the number 1; keys hold it.
  policy_version: 1.0
  lease_ttl: 60
  # run_id from an argument named like an Object member: inside config.run a call without it is the run's.
  scope_from:
    thread_id: conversation
    run_id: constructor
action_ledger:
${store.yaml.ledger}
task_ledger:
${store.yaml.tasks}
audit_receipt:
  signing_key_env: ${KEY_ENV}
  storage: file
  path: ${join(dir, "cfg-receipts.jsonl")}
state_flush:
  storage: file
  path: ${join(dir, "cfg-state.json")}
  python_lock: true
tools:
  send_payment:
    ledger: true
    side_effect_class: payment
  post_message:
    # A mapping: the global store with these keys over it, on both sides (this package used to make it memory).
    ledger:
      on_args_drift: hard
    side_effect_class: keyed_mutate
  charge_order:
    ledger: true
    side_effect_class: keyed_mutate
    request_id_from: order_id
tasks:
  nightly_report:
    id_from: [region, day]
  import_batch:
    ledger: true
`

const toCallMeta = (m: Meta = {}): CallMeta => ({
  ...(m.tool_call_id !== undefined && { toolCallId: m.tool_call_id }),
  ...(m.request_id !== undefined && { requestId: m.request_id }),
  ...(m.thread_id !== undefined && { threadId: m.thread_id }),
  ...(m.run_id !== undefined && { runId: m.run_id }),
})
const toTaskMeta = (m: Meta = {}): TaskCallMeta => ({
  ...(m.task_id !== undefined && { taskId: m.task_id }),
  ...(m.run_id !== undefined && { runId: m.run_id }),
})

/** One step through this package, in this process, on a config loaded afresh (as a new worker would). */
async function tsStep(yaml: string, step: Step): Promise<Outcome> {
  let executed = 0
  const config = await loadConfig(yaml)
  const out: Outcome = { executed: 0, result: null, error: null, message: null }
  try {
    if (step.op === "tool") {
      const name = step.name as string
      const tools = config.instrument({
        [name]: async (args: Record<string, unknown>, tx: TransitionContext) => {
          executed++
          return tx.sideEffect(() => ({ tool: name, args, by: "typescript" }))
        },
      })
      const call = () =>
        (tools[name] as (a: unknown, m: CallMeta) => Promise<unknown>)(step.args, toCallMeta(step.meta))
      out.result = step.run === undefined ? await call() : await config.run(step.run, call)
    } else if (step.op === "task") {
      const name = step.name as string
      const tasks = config.instrument({
        [name]: async (args: Record<string, unknown>, _ctx: TaskContext) => {
          executed++
          if (step.fail) throw new Error("task failed on purpose")
          return { task: name, args, by: "typescript" }
        },
      })
      out.result = await (tasks[name] as (a: unknown, m: TaskCallMeta) => Promise<unknown>)(
        step.args ?? {},
        toTaskMeta(step.meta),
      )
    } else if (step.op === "flush") {
      await config
        .run(step.run as string, (run) => {
          run.record(step.state ?? {})
          if (step.fail) throw new Error("boom")
        })
        .catch(() => {})
    } else if (step.op === "resume") {
      out.result = await config.resume(step.run as string)
    }
  } catch (e) {
    out.error = (e as Error).name
    out.message = (e as Error).message
  } finally {
    await config.close()
  }
  out.executed = executed
  return out
}

function pyStep(src: string, yaml: string, step: Step): Outcome {
  const script = join(dirname(fileURLToPath(import.meta.url)), "python", "original-config.py")
  const r = spawnSync("python3", [script, yaml, JSON.stringify(step)], {
    encoding: "utf8",
    env: pythonEnv(src, { [KEY_ENV]: KEY_VALUE }),
  })
  return outcomeOf(r.stdout, r.stderr, "python")
}

/** Key-sorted JSON, so results that differ only in key order (Postgres JSONB reorders keys) compare equal. */
export const same = (a: unknown, b: unknown): boolean => {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([x], [y]) => (x < y ? -1 : 1))
              .map(([k, x]) => [k, sort(x)]),
          )
        : v
  return JSON.stringify(sort(a)) === JSON.stringify(sort(b))
}

export async function configChecks(
  src: string,
  dir: string,
  store: SharedStore,
  report: Check,
): Promise<void> {
  const check: Check = (name, ok, detail) => report(`${store.kind} config: ${name}`, ok, detail)
  mkdirSync(dir, { recursive: true })
  const yaml = join(dir, "mycelium.yaml")
  writeFileSync(yaml, yamlFor(dir, store))
  process.env[KEY_ENV] = KEY_VALUE
  const step = (side: Side, s: Step) => (side === "python" ? pyStep(src, yaml, s) : tsStep(yaml, s))
  const other = (side: Side): Side => (side === "python" ? "typescript" : "python")

  /**
   * `writer` runs the step once (one new row), then `replayer` runs the same step: the stored result, no body, no
   * new row. Returns the new row's key (the task ledger's request id; the action ledger's row id).
   */
  let writes = 0
  const pair = async (label: string, writer: Side, s: Step): Promise<string | undefined> => {
    const of = s.op === "task" ? "tasks" : "ledger"
    const before = new Set(await store.keys(of))
    const w = await step(writer, s)
    const added = (await store.keys(of)).filter((k) => !before.has(k))
    writes += w.executed
    const r = await step(other(writer), s)
    const after = (await store.keys(of)).filter((k) => !before.has(k))
    check(
      `${label}: ${writer} runs it once, ${other(writer)} replays it`,
      w.executed === 1 &&
        w.error === null &&
        added.length === 1 &&
        r.executed === 0 &&
        r.error === null &&
        same(r.result, w.result) &&
        after.length === 1,
      { writer: w, replayer: r, rows: after },
    )
    return added[0]
  }

  for (const writer of ["typescript", "python"] as const) {
    const x = writer === "python" ? "py" : "ts"
    // config.run(runId): the original enters TransitionScope(thread_id=run_id, run_id=run_id).
    await pair("config.run scope", writer, {
      op: "tool",
      name: "post_message",
      args: { text: "hi" },
      meta: { tool_call_id: `c-run-${x}` },
      run: `r-${x}`,
    })
    // scope_from: the argument names the thread; the run still names the run.
    await pair("scope_from argument inside config.run", writer, {
      op: "tool",
      name: "post_message",
      args: { text: "hi", conversation: `conv-${x}` },
      meta: { tool_call_id: `c-scope-${x}` },
      run: `r-${x}`,
    })
    await pair("scope_from argument outside a run", writer, {
      op: "tool",
      name: "post_message",
      args: { text: "hi", conversation: `conv-${x}` },
      meta: { tool_call_id: `c-scope-out-${x}` },
    })
    // A present but null scope_from argument: the original's str(None) is the thread "None", not the run.
    await pair("scope_from argument null inside config.run", writer, {
      op: "tool",
      name: "post_message",
      args: { text: "hi", conversation: null },
      meta: { tool_call_id: `c-scope-null-${x}` },
      run: `r-${x}`,
    })
    // Booleans and small floats key as Python's str() writes them (True, 1e-05), on both sides.
    for (const [label, value] of [
      ["true", true],
      ["0.00001", 0.00001],
    ] as const)
      await pair(`scope_from argument ${label} outside a run`, writer, {
        op: "tool",
        name: "post_message",
        args: { text: "hi", conversation: value },
        meta: { tool_call_id: `c-scope-${label}-${x}` },
      })
    await pair("scope_from argument named 'constructor' inside config.run", writer, {
      op: "tool",
      name: "post_message",
      args: { text: "hi", constructor: `run-arg-${x}` },
      meta: { tool_call_id: `c-ctor-${x}` },
      run: `r-${x}`,
    })
    // An explicit thread_id beats both the run and scope_from.
    await pair("explicit thread_id inside config.run", writer, {
      op: "tool",
      name: "post_message",
      args: { text: "hi", conversation: `conv-${x}` },
      meta: { tool_call_id: `c-thread-${x}`, thread_id: `t-${x}` },
      run: `r-${x}`,
    })
    // request_id_from: the row is `{tool}:{field}:{value stripped}`, whoever calls, whatever the tool-call id.
    const rid = await pair("request_id_from", writer, {
      op: "tool",
      name: "charge_order",
      args: { order_id: ` o-${x} `, amount: 5 },
      meta: { tool_call_id: `c-ord-${x}` },
    })
    check(`request_id_from keys '${rid}' as the original`, rid === `charge_order:order_id:o-${x}`, rid)
    // Legacy class alias: `payment` is non_idempotent_mutate in both.
    await pair("legacy side_effect_class 'payment' inside config.run", writer, {
      op: "tool",
      name: "send_payment",
      args: { amount: 100, recipient: "acct_1" },
      meta: { tool_call_id: `c-pay-${x}` },
      run: `r-${x}`,
    })
    await pair("explicit request_id", writer, {
      op: "tool",
      name: "send_payment",
      args: { amount: 7, recipient: "acct_2" },
      meta: { request_id: `pay-${x}` },
    })

    // Tasks: the request id is the task ledger file's key, so each side's derivation is compared directly.
    const tasks: [string, Step, string][] = [
      [
        "id_from scalars",
        { op: "task", name: "nightly_report", args: { region: `eu-${x}`, day: 20261201 } },
        `nightly_report:region=eu-${x}:day=20261201`,
      ],
      [
        "id_from list value",
        { op: "task", name: "nightly_report", args: { region: [`eu-${x}`, "us"], day: "d" } },
        `nightly_report:region=['eu-${x}', 'us']:day=d`,
      ],
      [
        "id_from dict value",
        { op: "task", name: "nightly_report", args: { region: { b: [1, null], a: true, x }, day: "d" } },
        `nightly_report:region={'b': [1, None], 'a': True, 'x': '${x}'}:day=d`,
      ],
      [
        "id_from with one field absent",
        { op: "task", name: "nightly_report", args: { day: `d-${x}` } },
        `nightly_report:day=d-${x}`,
      ],
      [
        "task_id",
        { op: "task", name: "import_batch", args: { batch: "b" }, meta: { task_id: `T-${x}` } },
        `T-${x}`,
      ],
      [
        "run_id",
        { op: "task", name: "import_batch", args: { batch: "b" }, meta: { run_id: `run-${x}` } },
        `import_batch:run-${x}`,
      ],
    ]
    for (const [label, s, id] of tasks) {
      const key = await pair(`task ${label}`, writer, s)
      check(`task ${label} is request id '${id}' on both`, key === id, key)
    }
    const hashed = await pair("task hash of the arguments", writer, {
      op: "task",
      name: "import_batch",
      args: { batch: `b-${x}`, n: 3, ratio: 0.5 },
    })
    check("task hash is '{task}:' and 16 hex", /^import_batch:[0-9a-f]{16}$/.test(hashed ?? ""), hashed)
    // A failed task runs again on the next call, whoever failed it.
    const failed: Step = { op: "task", name: "nightly_report", args: { region: `fail-${x}`, day: "d" } }
    const f = await step(writer, { ...failed, fail: true })
    const g = await step(other(writer), failed)
    const h = await step(writer, failed)
    writes += f.executed + g.executed
    check(
      `task failed by ${writer} runs again on ${other(writer)}, then replays on ${writer}`,
      f.executed === 1 &&
        f.error !== null &&
        g.executed === 1 &&
        g.error === null &&
        h.executed === 0 &&
        same(h.result, g.result),
      { f, g, h },
    )

    // state_flush: one side's run flushes, the other resumes it.
    for (const fail of [false, true]) {
      const run = `s-${x}-${fail ? "error" : "done"}`
      const state = { step: 3, messages: [{ role: "user", content: "hi" }], by: writer }
      await step(writer, { op: "flush", run, state, fail })
      const back = await step(other(writer), { op: "resume", run })
      check(
        `state_flush: ${other(writer)} resumes a run ${writer} ${fail ? "failed" : "completed"}`,
        back.error === null && same(back.result, state),
        back,
      )
    }
  }

  // Both sides write the same snapshot row for the same ending; only the error's class name is their own.
  const snapshots = JSON.parse(readFileSync(join(dir, "cfg-state.json"), "utf8")) as Record<
    string,
    Record<string, unknown>
  >
  const shape = (row: Record<string, unknown> | undefined) =>
    row && {
      ...row,
      updated_at: typeof row.updated_at,
      error: String(row.error).replace(/^\w+: /, "<Name>: "),
    }
  for (const end of ["done", "error"]) {
    const [t, p] = [shape(snapshots[`s-ts-${end}`]), shape(snapshots[`s-py-${end}`])]
    check(
      `state_flush: a ${end === "done" ? "completed" : "failed"} run's snapshot row has the same fields and values on both`,
      t !== undefined && same({ ...t, run_id: 0, state: 0 }, { ...p, run_id: 0, state: 0 }),
      { t, p },
    )
  }

  // Each side signs what it ran (completed and failed), and neither signs a replay.
  // Every receipt in the shared JSONL file (each side signed its own writes) verifies on both sides, with the
  // key read from a variable that ends in a newline.
  const listed = await new FileReceiptStore(join(dir, "cfg-receipts.jsonl")).list()
  // Both sides append to one file and the original's receipts carry no chain link: another writer's unchained
  // receipts among chained ones, which verification is told to allow (docs/receipts.md).
  const verdict = await verifyReceipts(listed, { hmac: KEY_VALUE.trim() }, { allowUnchained: true })
  const py = pyStep(src, yaml, { op: "verify" })
  const pyList = (py.result ?? []) as [string, string, boolean][]
  check(
    `audit_receipt (signing_key_env with a trailing newline): typescript verifies all ${listed.length} receipts`,
    listed.length === writes && verdict.ok && verdict.valid === listed.length,
    { writes, verdict },
  )
  check(
    `audit_receipt: the original verifies all ${pyList.length} receipts`,
    py.error === null && pyList.length === listed.length && pyList.every(([, , ok]) => ok),
    py.error ?? pyList.filter(([, , ok]) => !ok),
  )
}
