// A Python worker and a TypeScript worker redispatched the same call at the same instant, on one shared store: the
// effect runs exactly once, and the loser waits for the winner's result instead of running or failing. Both
// processes start first and call at one agreed instant (INTEROP_START_AT), and the effect takes 300 ms, so the loser
// finds the row in flight. Part of `npm run interop:python` (scripts/python-interop.ts).
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

export async function raceChecks(
  src: string,
  store: SharedStore,
  tsScript: string,
  report: Check,
): Promise<void> {
  const check: Check = (name, ok, detail) => report(`${store.kind} race: ${name}`, ok, detail)
  const spec = JSON.stringify(store.spec)
  const cases: [string, string][] = []
  for (const cls of ["keyed_mutate", "non_idempotent_mutate"])
    for (let i = 0; i < 3; i++) cases.push([cls, `race-${cls.slice(0, 5)}-${i}`])
  for (let i = 0; i < cases.length; i += PAIRS_AT_ONCE) {
    const startAt = String(Date.now() + START_DELAY_MS)
    const batch = cases.slice(i, i + PAIRS_AT_ONCE)
    const env = { INTEROP_START_AT: startAt, INTEROP_BODY_MS: BODY_MS }
    const answers = await Promise.all(
      batch.flatMap(([cls, callId], j) => [
        run(
          "python3",
          [join(here, "python", "original-interop.py"), spec, cls, callId, String(40 + i + j)],
          pythonEnv(src, env),
        ),
        run(
          process.execPath,
          ["--import", "tsx", tsScript, "--ts-call", spec, cls, callId, String(40 + i + j)],
          {
            ...process.env,
            ...env,
          },
        ),
      ]),
    )
    batch.forEach(([cls, callId], j) => {
      const [py, ts] = [answers[2 * j], answers[2 * j + 1]]
      const ok =
        typeof py === "object" &&
        typeof ts === "object" &&
        py.executed + ts.executed === 1 &&
        py.error === null &&
        ts.error === null &&
        same(py.result, ts.result)
      const winner = typeof py === "object" && py.executed === 1 ? "python" : "typescript"
      check(`${cls} ${callId}: the effect ran once (${winner}), the other side returned its result`, ok, {
        py,
        ts,
      })
    })
  }
}
