// A script that loads mycelium.yaml with Redis stores (a RESP socket for the action ledger, another for the task
// ledger) exits once it calls config.close(); without it the sockets keep Node alive. Real Redis, real processes.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runTag } from "../adapters/servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const dir = mkdtempSync(join(tmpdir(), "mycelium-close-"))
const tag = runTag("close")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

writeFileSync(
  join(dir, "mycelium.yaml"),
  `transition:
  agent_id: billing
  policy_version: v1
action_ledger:
  storage: redis
  url_env: REDIS_URL
  prefix: "${tag}:action:"
  tools: [charge]
task_ledger:
  storage: redis
  url_env: REDIS_URL
  prefix: "${tag}:task:"
tools:
  charge:
    side_effect_class: keyed_mutate
tasks:
  report:
    ledger: true
`,
)

const script = (close: boolean) => `
import { loadConfig } from ${JSON.stringify(resolve("src/node/config.ts"))}
const config = await loadConfig(${JSON.stringify(join(dir, "mycelium.yaml"))}, { onWarning: () => {} })
const { charge, report } = config.instrument({
  charge: async (args) => ({ charged: args.amount }),
  report: async (args) => ({ day: args.day }),
})
console.log(JSON.stringify([await charge({ amount: 5 }, { toolCallId: "${tag}-c" }), await report({ day: "d" })]))
${close ? "await config.close()\nawait config.close()" : ""}
`

/** Runs the script; resolves with its exit code and output, or "running" if it is still alive after `ms`. */
function runScript(
  close: boolean,
  ms: number,
): Promise<{ state: number | "running"; out: string; err: string }> {
  const file = join(dir, `script-${close}.mts`)
  writeFileSync(file, script(close))
  const child = spawn(process.execPath, ["--import", "tsx", file], {
    env: { ...process.env, REDIS_URL },
  })
  let out = ""
  let err = ""
  child.stdout.on("data", (d) => {
    out += d
  })
  child.stderr.on("data", (d) => {
    err += d
  })
  return new Promise((done) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      done({ state: "running", out, err })
    }, ms)
    child.on("exit", (code) => {
      clearTimeout(timer)
      done({ state: code ?? -1, out, err })
    })
  })
}

describe("MyceliumConfig.close()", () => {
  it("lets a script on Redis stores exit; without it the open sockets keep the process alive", async () => {
    const [closed, open] = await Promise.all([runScript(true, 20_000), runScript(false, 8_000)])
    expect([closed.state, closed.err]).toEqual([0, ""])
    expect(JSON.parse(closed.out)).toEqual([{ charged: 5 }, { day: "d" }])
    // The same calls without close(): their results are printed, and then the process does not end.
    expect(open.state).toBe("running")
    expect(JSON.parse(open.out)).toEqual([{ charged: 5 }, { day: "d" }])
  }, 30_000)
})
