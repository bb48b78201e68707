// `mycelium doctor` against what it used to miss: a task-ledger store that is down, text from a row or the config
// holding terminal escapes, and a --timeout past what setTimeout can wait.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { RespConnection } from "../../src/adapters/redis.ts"
import { runTag } from "../adapters/servers/env.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-doctor-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const run = cliRunner(cwd)
type Check = { id: string; status: string; message: string }

function doctor(yaml: string, ...args: string[]) {
  const path = join(cwd, `${runTag("c")}-${Math.random().toString(36).slice(2)}.yaml`)
  writeFileSync(path, `transition: {agent_id: a, policy_version: v}\n${yaml}`)
  return run(["doctor", "-c", path, ...args])
}

describe("doctor probes the task ledger's stores too", () => {
  it("task_ledger down: FAIL (exit 1), password hidden", () => {
    const r = doctor(
      "task_ledger: {storage: postgres, dsn: 'postgres://u:hunter2@127.0.0.1:1/db'}\ntasks: {t: {ledger: true}}\n",
      "--json",
      "--timeout",
      "2",
    )
    expect(r.code, r.err).toBe(1)
    const checks = JSON.parse(r.out) as Check[]
    expect(checks.find((c) => c.id.startsWith("ledger.connectivity"))).toMatchObject({
      id: "ledger.connectivity(task_ledger postgres postgres://u:***@127.0.0.1:1/db table mycelium_task_ledger)",
      status: "FAIL",
    })
    expect(r.out).not.toContain("hunter2")
  })
  it("a tasks.<name>.ledger override down fails beside an answering task_ledger and action ledger", () => {
    const r = doctor(
      `action_ledger: {storage: file, path: ${join(cwd, "a.json")}, tools: [t]}\ntools: {t: {side_effect_class: read}}\n` +
        `task_ledger: {storage: redis, url: '${REDIS_URL}'}\n` +
        "tasks: {job: {ledger: {storage: redis, url: 'redis://127.0.0.1:1'}}, other: {ledger: true}}\n",
      "--json",
    )
    const checks = (JSON.parse(r.out) as Check[]).filter((c) => c.id.startsWith("ledger.connectivity"))
    expect(checks).toEqual([
      expect.objectContaining({ id: `ledger.connectivity(file ${join(cwd, "a.json")})`, status: "PASS" }),
      expect.objectContaining({ id: `ledger.connectivity(task_ledger redis ${REDIS_URL})`, status: "PASS" }),
      expect.objectContaining({
        id: "ledger.connectivity(task_ledger redis redis://127.0.0.1:1)",
        status: "FAIL",
      }),
    ])
    expect(r.code).toBe(1)
  })
})

describe("doctor prints rows and config text inert", () => {
  it("an owner shaped like a Python worker's but holding escapes is neither trusted nor printed raw", async () => {
    const prefix = `doctor-esc-${runTag("e")}:`
    const conn = new RespConnection(REDIS_URL)
    const owner = "\u001b]0;owned\u0007\u001b[2J\u001b[1;1HPASS:1"
    await conn.command(
      "SET",
      `${prefix}esc`,
      JSON.stringify({ request_id: "esc", tool: "t", status: "completed", owner }),
    )
    try {
      const r = doctor(
        `action_ledger: {storage: redis, url: '${REDIS_URL}', prefix: '${prefix}', tools: [t]}\ntools: {t: {side_effect_class: read}}\n`,
      )
      expect(r.out).toContain("ledger.connectivity")
      // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
      expect(r.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/)
    } finally {
      await conn.command("DEL", `${prefix}esc`)
      conn.close()
    }
  })
  it("a store path from the config with a control character prints as \\xNN", () => {
    const ledger = join(cwd, "evil\u001b[2J.json")
    writeFileSync(`${ledger}.lock`, "")
    const r = doctor(
      `action_ledger: {storage: file, path: "${ledger.replace("\u001b", "\\e")}", tools: [t]}\ntools: {t: {side_effect_class: read}}\n`,
    )
    expect(r.out).toContain("file.python_lock(")
    expect(r.out).toContain("evil\\x1b[2J.json")
    expect(r.out).not.toContain("\u001b")
  })
})

describe("doctor names a Python worker's flock file beside the receipt and state files too", () => {
  it("audit_receipt and state_flush files with a <path>.lock and no python_lock: WARN; with it: none", () => {
    const receipts = join(cwd, "rcpt.jsonl")
    const state = join(cwd, "state.json")
    writeFileSync(`${receipts}.lock`, "")
    writeFileSync(`${state}.lock`, "")
    const yaml = (lock: boolean) =>
      `audit_receipt: {signing_key: k, storage: file, path: "${receipts}"${lock ? ", python_lock: true" : ""}}\n` +
      `state_flush: {storage: file, path: "${state}"${lock ? ", python_lock: true" : ""}}\n`
    const ids = (lock: boolean) =>
      (JSON.parse(doctor(yaml(lock), "--json", "--no-connectivity").out) as Check[])
        .filter((c) => c.id.startsWith("file.python_lock"))
        .map((c) => [c.id, c.status])
    expect(ids(false)).toEqual([
      [`file.python_lock(${receipts})`, "WARN"],
      [`file.python_lock(${state})`, "WARN"],
    ])
    expect(ids(true)).toEqual([])
  })
})

describe("doctor --timeout", () => {
  it.each(["2200000", "Infinity", "0", "0.0001", "x"])(
    "%s is a usage error (exit 2), not every probe failing at once",
    (t) => {
      const r = doctor(
        `action_ledger: {storage: file, path: ${join(cwd, "ok.json")}, tools: [t]}\ntools: {t: {side_effect_class: read}}\n`,
        "--timeout",
        t,
      )
      expect(r.code, r.out).toBe(2)
      expect(r.err).toContain("--timeout must be a positive number of seconds, at most 3600")
    },
  )
})
