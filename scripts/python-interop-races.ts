// A Python worker and a TypeScript worker reach the same call or task at the same instant, on one shared store: the
// effect runs exactly once. A redispatched tool call's loser waits for the winner's result; a task's loser is told
// it is in flight (the original's task ledger never waits), or with `wait` waits for it. Both processes start
// first and act at one agreed instant (INTEROP_START_AT), and the work takes 300 ms, so the loser finds it in
// flight. Part of `npm run interop:python` (scripts/python-interop.ts).
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Check } from "./python-interop-config.ts"
import { same } from "./python-interop-config.ts"
import { type Outcome, outcomeOf, pythonEnv, type SharedStore } from "./python-interop-stores.ts"

const here = dirname(fileURLToPath(import.meta.url))
const BODY_MS = "300"
const PAIRS_AT_ONCE = 2
// Long enough for a tsx child and a python child to be up on a loaded 2-core machine.
const START_DELAY_MS = 5_000

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<Outcome | string> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env })
    let out = ""
    let err = ""
    child.stdout.on("data", (d) => {
      out += d
    })
    child.stderr.on("data", (d) => {
      err += d
    })
    // A child that printed no outcome is reported as text, so the other races still run.
    child.on("close", () => {
      try {
        resolve(outcomeOf(out, err, cmd))
      } catch (e) {
        resolve(String(e))
      }
    })
  })
}

/** One race: the two children's arguments and environment, and what must hold of their outcomes. */
interface Race {
  name: string
  py: string[]
  ts: string[]
  tsEnv?: Record<string, string>
  /** Starts this side that much after the other (ms), so the other side surely holds the work first. */
  late?: { side: "python" | "typescript"; ms: number }
  /** Both outcomes are objects here; null when they hold, else what went wrong. */
  judge(py: Outcome, ts: Outcome): string | null
}

async function runRaces(src: string, tsScript: string, races: Race[], check: Check): Promise<void> {
  for (let i = 0; i < races.length; i += PAIRS_AT_ONCE) {
    const batch = races.slice(i, i + PAIRS_AT_ONCE)
    const at = Date.now() + START_DELAY_MS
    const answers = await Promise.all(
      batch.flatMap((r) => {
        const env = (side: "python" | "typescript") => ({
          INTEROP_START_AT: String(at + (r.late?.side === side ? r.late.ms : 0)),
          INTEROP_BODY_MS: BODY_MS,
        })
        return [
          run("python3", r.py, pythonEnv(src, env("python"))),
          run(process.execPath, ["--import", "tsx", tsScript, ...r.ts], {
            ...process.env,
            ...env("typescript"),
            ...r.tsEnv,
          }),
        ]
      }),
    )
    batch.forEach((r, j) => {
      const [py, ts] = [answers[2 * j], answers[2 * j + 1]]
      const wrong =
        typeof py === "object" && typeof ts === "object" ? r.judge(py, ts) : "a side printed no outcome"
      check(r.name, wrong === null, { wrong, py, ts })
    })
  }
}

/** The effect ran once, and the side that did not run it returned the same result. */
const onceSameResult = (py: Outcome, ts: Outcome): string | null =>
  py.executed + ts.executed !== 1
    ? `ran ${py.executed + ts.executed} times`
    : py.error !== null || ts.error !== null
      ? "a side failed"
      : same(py.result, ts.result)
        ? null
        : "the results differ"

/**
 * The task ran once; the loser was told it is in flight, or returned the winner's result: waiting, or because it
 * came after the winner had finished (on a loaded machine the two starts can be that far apart).
 */
const taskOnce =
  (tsWaits: boolean) =>
  (py: Outcome, ts: Outcome): string | null => {
    if (py.executed + ts.executed !== 1) return `ran ${py.executed + ts.executed} times`
    const [won, lost] = py.executed === 1 ? [py, ts] : [ts, py]
    if (won.error !== null) return `the winner failed: ${won.message}`
    if (lost.error === "TaskLedgerPendingError") return lost === ts && tsWaits ? "did not wait" : null
    if (lost.error === null && same(lost.result, won.result)) return null
    return `the loser answered ${lost.error ?? JSON.stringify(lost.result)}`
  }

export async function raceChecks(
  src: string,
  store: SharedStore,
  tsScript: string,
  report: Check,
): Promise<void> {
  const check: Check = (name, ok, detail) => report(`${store.kind} race: ${name}`, ok, detail)
  const spec = JSON.stringify(store.spec)
  const races: Race[] = []
  for (const cls of ["keyed_mutate", "non_idempotent_mutate"])
    for (let i = 0; i < 3; i++) {
      const callId = `race-${cls.slice(0, 5)}-${i}`
      const amount = String(40 + races.length)
      races.push({
        name: `${cls} ${callId}: the effect ran once, the other side returned its result`,
        py: [join(here, "python", "original-interop.py"), spec, cls, callId, amount],
        ts: ["--ts-call", spec, cls, callId, amount],
        judge: onceSameResult,
      })
    }
  const tasks = JSON.stringify(store.taskSpec)
  for (let i = 0; i < 4; i++) {
    const taskId = `race-task-${i}`
    const tsWaits = i >= 2
    races.push({
      name: `task ${taskId}: ran once, the other side ${tsWaits ? "(typescript waiting) " : ""}was told or waited`,
      py: [join(here, "python", "original-task.py"), tasks, taskId],
      ts: ["--ts-task", tasks, taskId],
      tsEnv: tsWaits ? { INTEROP_WAIT: "1" } : {},
      judge: taskOnce(tsWaits),
    })
  }
  // A task one side ran and failed is run again by the other, and the first side calls while it runs: it must see
  // the new claim in flight, not its own old lease (which this package keeps beside the row; the original has none).
  for (const first of ["typescript", "python"] as const) {
    const taskId = `retry-after-${first}-failed`
    const failed = await (first === "typescript"
      ? run(process.execPath, ["--import", "tsx", tsScript, "--ts-task", tasks, taskId, "fail"], process.env)
      : run("python3", [join(here, "python", "original-task.py"), tasks, taskId, "fail"], pythonEnv(src)))
    if (typeof failed !== "object" || failed.error === null) {
      check(`task ${taskId}: set up`, false, failed)
      continue
    }
    const rerun = first === "typescript" ? "python" : "typescript"
    races.push({
      name: `task ${taskId}: ${rerun} runs it again, ${first} calling meanwhile is told it is in flight`,
      py: [join(here, "python", "original-task.py"), tasks, taskId],
      ts: ["--ts-task", tasks, taskId],
      late: { side: first, ms: 150 },
      judge: (py, ts) => {
        const [again, meanwhile] = rerun === "python" ? [py, ts] : [ts, py]
        if (again.executed !== 1 || again.error !== null) return `the re-run answered ${again.error}`
        if (meanwhile.executed !== 0 || meanwhile.error !== "TaskLedgerPendingError")
          return `the call meanwhile ran ${meanwhile.executed} times, answered ${meanwhile.error}`
        return null
      },
    })
  }
  await runRaces(src, tsScript, races, check)
}
