// MyceliumConfig.close() on real Redis in real processes (an open socket shows as a process that never exits): it
// lets a script end, and misused as application code misuses it (a tool called after close(), a store first opened
// after close(), close() racing a call's first use, close() before anything opened, a store whose close() throws)
// every script still ends by itself; what each call did is printed and checked.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runTag } from "../adapters/servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const dir = mkdtempSync(join(tmpdir(), "mycelium-close-"))
const tag = runTag("advclose")
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const yaml = join(dir, "mycelium.yaml")
writeFileSync(
  yaml,
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

const prelude = `
import { loadConfig, nodeStorageFactory } from ${JSON.stringify(resolve("src/node/config.ts"))}
const outcome = (p) => p.then((v) => ({ ok: v ?? null }), (e) => ({ code: e?.code ?? String(e) }))
const bodies = { charge: async (args) => ({ charged: args.amount }), report: async (args) => ({ day: args.day }) }
`

/**
 * Runs a script body; resolves with its exit state and its last printed line, parsed. `aliveAfterPrint`: a script
 * still running that long after its first line counts as "running" (Node exits as soon as nothing holds it open, so
 * seconds show a held process as well as a longer fixed wait from its start).
 */
function runScript(name: string, body: string, ms = 20_000, aliveAfterPrint?: number) {
  const file = join(dir, `${name}.mts`)
  writeFileSync(file, `${prelude}\n${body}`)
  const child = spawn(process.execPath, ["--import", "tsx", file], { env: { ...process.env, REDIS_URL } })
  let out = ""
  let err = ""
  child.stdout.on("data", (d) => {
    out += d
  })
  child.stderr.on("data", (d) => {
    err += d
  })
  return new Promise<{ state: number | "running"; printed: unknown; err: string }>((done) => {
    const finish = (state: number | "running") => {
      const last = out.trim().split("\n").at(-1)
      done({ state, printed: last ? JSON.parse(last) : null, err })
    }
    const stop = () => {
      child.kill("SIGKILL")
      finish("running")
    }
    let timer = setTimeout(stop, ms)
    if (aliveAfterPrint !== undefined) {
      // After the listener above, so `out` holds this chunk.
      const onLine = () => {
        if (!out.includes("\n")) return
        child.stdout.off("data", onLine)
        clearTimeout(timer)
        timer = setTimeout(stop, aliveAfterPrint)
      }
      child.stdout.on("data", onLine)
    }
    child.on("close", (code) => {
      clearTimeout(timer)
      finish(code ?? -1)
    })
  })
}

const load = `await loadConfig(${JSON.stringify(yaml)}, { onWarning: () => {} })`

describe("MyceliumConfig.close()", () => {
  it("lets a script on Redis stores exit; without it the open sockets keep the process alive", async () => {
    const body = (close: boolean) => `const config = ${load}
const { charge, report } = config.instrument(bodies)
console.log(JSON.stringify([await charge({ amount: 5 }, { toolCallId: "${tag}-c-${close}" }), await report({ day: "d-${close}" })]))
${close ? "await config.close()\nawait config.close()" : ""}`
    // Each script its own task arguments: a task is keyed by them, and the two run at once (one would find the
    // other's claim in flight).
    const [closed, open] = await Promise.all([
      runScript("closed", body(true)),
      runScript("open", body(false), 20_000, 2_000),
    ])
    expect([closed.state, closed.err]).toEqual([0, ""])
    expect(closed.printed).toEqual([{ charged: 5 }, { day: "d-true" }])
    // The same calls without close(): their results are printed, and then the process does not end.
    expect(open.state).toBe("running")
    expect(open.printed).toEqual([{ charged: 5 }, { day: "d-false" }])
  }, 30_000)
})

describe("MyceliumConfig.close() misused", () => {
  it("a tool called after close() fails with a typed error instead of reconnecting and keeping the process alive", async () => {
    const r = await runScript(
      "after",
      `const config = ${load}
const { charge } = config.instrument(bodies)
const first = await outcome(charge({ amount: 1 }, { toolCallId: "${tag}-a1" }))
await config.close()
const second = await outcome(charge({ amount: 2 }, { toolCallId: "${tag}-a2" }))
console.log(JSON.stringify([first, second]))`,
    )
    expect(r.printed).toEqual([{ ok: { charged: 1 } }, { code: "ledger_storage_unavailable" }])
    expect([r.state, r.err]).toEqual([0, ""])
  }, 30_000)

  it("a store first opened after close() is refused, not opened and left open", async () => {
    const r = await runScript(
      "opened-after",
      `const config = ${load}
await config.close()
const { charge, report } = config.instrument(bodies)
console.log(JSON.stringify([
  await outcome(charge({ amount: 1 }, { toolCallId: "${tag}-b1" })),
  await outcome(report({ day: "d" })),
]))`,
    )
    expect([r.state, r.err]).toEqual([0, ""])
    expect(r.printed).toEqual([{ code: "config_closed" }, { code: "config_closed" }])
  }, 30_000)

  it("close() racing a call's first use ends the process; the call completes or fails typed", async () => {
    const r = await runScript(
      "race",
      `const config = ${load}
const { charge } = config.instrument(bodies)
const call = outcome(charge({ amount: 3 }, { toolCallId: "${tag}-c1" }))
const closed = outcome(config.close())
console.log(JSON.stringify([await call, await closed]))`,
    )
    expect([r.state, r.err]).toEqual([0, ""])
    const [call, closed] = r.printed as [{ ok?: unknown; code?: string }, unknown]
    expect(closed).toEqual({ ok: null })
    expect(call.ok === undefined ? call.code : call.ok).toSatisfy(
      (v: unknown) => v === "ledger_storage_unavailable" || JSON.stringify(v) === '{"charged":3}',
    )
  }, 30_000)

  it("close() before any store opened, twice, resolves; a store whose close() throws does not keep the others open", async () => {
    const r = await runScript(
      "throwing",
      `const early = ${load}
const e1 = await outcome(early.close())
const e2 = await outcome(early.close())
const config = await loadConfig(${JSON.stringify(yaml)}, {
  onWarning: () => {},
  storageFactory: async (choice) => {
    const s = await nodeStorageFactory(choice)
    const close = s.close.bind(s)
    return Object.assign(s, { close: () => { close(); throw new Error("close failed") } })
  },
})
const { charge, report } = config.instrument(bodies)
await charge({ amount: 4 }, { toolCallId: "${tag}-d1" })
await report({ day: "d" })
const c1 = await outcome(config.close())
const c2 = await outcome(config.close())
console.log(JSON.stringify([e1, e2, c1, c2]))`,
    )
    expect([r.state, r.err]).toEqual([0, ""])
    expect(r.printed).toEqual([
      { ok: null },
      { ok: null },
      { code: "Error: close failed" },
      { code: "Error: close failed" },
    ])
  }, 30_000)
})

describe("config.run() in a script that imports only loadConfig", () => {
  it("keys its calls by the run as the original does, and close() after it resolves", async () => {
    // The same file, call and run as a Python worker's: cfg.apply(send_payment) inside `with cfg.run("r1")`, called
    // with amount=1, recipient="x", tool_call_id="tc-py". Its key, from the original (v1.34.0, dd64a35):
    const PYTHON_KEY = "9b85c60253c637aa8bc7613d0bb982ee53053a200a4c5b3c4169f029ff6fcdf3"
    const runYaml = join(dir, "run.yaml")
    writeFileSync(
      runYaml,
      `transition:\n  agent_id: a\n  policy_version: v1\naction_ledger:\n  storage: file\n  path: ${join(dir, "run-ledger.json")}\n  tools: [send_payment]\ntools:\n  send_payment:\n    side_effect_class: keyed_mutate\n`,
    )
    const r = await runScript(
      "run-scope",
      `const config = await loadConfig(${JSON.stringify(runYaml)})
const { send_payment } = config.instrument({ send_payment: async (a) => ({ paid: a.amount }) })
await config.run("r1", () => send_payment({ amount: 1, recipient: "x" }, { toolCallId: "tc-py" }))
const rows = await (await config.ledgerFor("send_payment")).listTransitions()
const closed = await outcome(config.close())
console.log(JSON.stringify([rows.map((e) => [e.requestId, e.kwargs.thread_id, e.kwargs.run_id]), closed]))`,
    )
    // No warning on stderr either: Node has AsyncLocalStorage, and loading the config registers it.
    expect([r.state, r.err]).toEqual([0, ""])
    expect(r.printed).toEqual([[[PYTHON_KEY, "r1", "r1"]], { ok: null }])
  }, 30_000)
})
