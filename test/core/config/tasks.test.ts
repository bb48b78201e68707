// mycelium.yaml's `task_ledger:` and `tasks:` wired to the TaskLedger: applyTask, instrument, id_from, receipts,
// and the ConfigErrors. Memory stores here; test/node/config-tasks.test.ts runs file, Redis and Postgres.

import { readFileSync } from "node:fs"
import { describe, expect, expectTypeOf, it } from "vitest"
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"
import type { ConfiguredTask, ConfiguredTool } from "../../../src/core/config/mycelium-config.ts"
import { MemoryReceiptStore, verifyReceipts } from "../../../src/core/receipts/index.ts"
import type { TaskContext } from "../../../src/core/tasks/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import { parseToolArguments } from "../../../src/tools.ts"

const vectors = JSON.parse(
  readFileSync(new URL("../../fixtures/python-vectors.json", import.meta.url), "utf8"),
) as {
  task_request_ids: Array<{
    task: string
    kwargs: Record<string, unknown>
    id_from: string[] | null
    request_id: string
  }>
}

const quiet = { onWarning: () => {} }
const KEY = "task-receipt-key"

const counted = () => {
  const calls: Array<Record<string, unknown>> = []
  const body = async (args: Record<string, unknown>, ctx: TaskContext) => {
    calls.push(args)
    return { n: calls.length, requestId: ctx.requestId }
  }
  return { calls, body }
}

describe("applyTask", () => {
  it("a ledgered task runs once for two calls with the same id; a new id runs again", async () => {
    const config = loadConfigFromString(
      "tasks:\n  nightly_report:\n    ledger: true\n    id_from: [region, day]\n",
      quiet,
    )
    const { calls, body } = counted()
    const report = config.applyTask("nightly_report", body)
    expect(report.taskName).toBe("nightly_report")
    const first = await report({ region: "eu", day: "2026-12-01" })
    const second = await report({ region: "eu", day: "2026-12-01", extra: 1 })
    expect(calls).toHaveLength(1)
    expect(second).toEqual(first)
    expect(first).toEqual({ n: 1, requestId: "nightly_report:region=eu:day=2026-12-01" })
    await report({ region: "us", day: "2026-12-01" })
    expect(calls).toHaveLength(2)
    const rows = await (await config.taskLedgerFor("nightly_report"))?.list()
    expect(rows?.map((t) => [t.row.request_id, t.row.status])).toEqual([
      ["nightly_report:region=eu:day=2026-12-01", "completed"],
      ["nightly_report:region=us:day=2026-12-01", "completed"],
    ])
  })

  it("request ids are the original's (its vectors: task_id, run_id, id_from, hash)", async () => {
    for (const v of vectors.task_request_ids) {
      const idFrom = v.id_from ? `\n    id_from: [${v.id_from.join(", ")}]` : ""
      const config = loadConfigFromString(`tasks:\n  ${v.task}:\n    ledger: true${idFrom}\n`, quiet)
      const task = config.applyTask(v.task, async (_a: Record<string, unknown>, ctx) => ctx.requestId)
      expect(await task(v.kwargs)).toBe(v.request_id)
      const [row] = (await (await config.taskLedgerFor(v.task))?.list()) ?? []
      expect(row?.row.request_id).toBe(v.request_id)
    }
    // The second parameter carries task_id / run_id as the original's kwargs do.
    const config = loadConfigFromString("tasks:\n  nightly_report:\n    ledger: true\n", quiet)
    const task = config.applyTask("nightly_report", async (_a: { day: string }, ctx) => ctx.requestId)
    expect(await task({ day: "d" }, { taskId: "T-42" })).toBe("T-42")
    expect(await task({ day: "d" }, { runId: "r-7" })).toBe("nightly_report:r-7")
  })

  it("a name the file does not configure (or configures without a ledger) runs every call, unchanged", async () => {
    const config = loadConfigFromString("tasks:\n  plain: {}\n", quiet)
    for (const name of ["plain", "unknown"]) {
      const { calls, body } = counted()
      const task = config.applyTask(name, body)
      await task({ a: 1 })
      expect(await task({ a: 1 })).toMatchObject({ n: 2 })
      expect(calls).toHaveLength(2)
      expect(config.taskLedgerFor(name)).toBeNull()
    }
  })

  it("an unledgered body's requestId is the id the ledger derives, exact numbers too", async () => {
    const config = loadConfigFromString("tasks:\n  t:\n    ledger: true\n  u: {}\n", quiet)
    const body = async (_a: object, ctx: TaskContext) => ctx.requestId
    const ledgered = config.applyTask("t", body)
    const plain = config.applyTask("u", body)
    // 2n ** 60n is Python's int, 1e16 its float (the ledger's id since it keys exact values), not their strings.
    for (const args of [{ n: 2n ** 60n }, parseToolArguments('{"n": 1e16}'), { n: 1.5 }])
      expect((await plain(args)).slice(2)).toBe((await ledgered(args)).slice(2))
  })

  it("names listed in task_ledger.tasks are ledgered; with tasks: all every name is", async () => {
    const listed = loadConfigFromString("task_ledger:\n  storage: memory\n  tasks: [a]\n", quiet)
    expect(listed.taskLedgerFor("a")).not.toBeNull()
    expect(listed.taskLedgerFor("b")).toBeNull()
    const all = loadConfigFromString("task_ledger:\n  storage: memory\n  tasks: all\n", quiet)
    const { calls, body } = counted()
    const any = all.applyTask("anything", body)
    await any({ x: 1 })
    await any({ x: 1 })
    expect(calls).toHaveLength(1)
  })

  it("tasks on one storage share one store instance, as tools do", async () => {
    const config = loadConfigFromString(
      "task_ledger:\n  storage: memory\n  tasks: [a, b]\ntasks:\n  c:\n    ledger: true\n",
      quiet,
    )
    const [a, b, c] = await Promise.all(["a", "b", "c"].map((n) => config.taskLedgerFor(n)))
    expect(a?.storage).toBe(b?.storage)
    expect(a?.storage).toBe(c?.storage)
    // A task_id shared by two tasks is one row (the original's rule: task_id is not prefixed).
    let runs = 0
    const ta = config.applyTask("a", async () => ++runs)
    const tb = config.applyTask("b", async () => ++runs)
    expect(await ta({}, { taskId: "shared" })).toBe(1)
    expect(await tb({}, { taskId: "shared" })).toBe(1)
    expect(runs).toBe(1)
  })

  it("a failed task is recorded and runs again on the next call (the original's rule)", async () => {
    const config = loadConfigFromString("tasks:\n  flaky:\n    ledger: true\n", quiet)
    let runs = 0
    const flaky = config.applyTask("flaky", async () => {
      runs++
      if (runs === 1) throw new Error("boom")
      return "ok"
    })
    await expect(flaky({ k: 1 })).rejects.toThrow("boom")
    expect(await flaky({ k: 1 })).toBe("ok")
    expect(await flaky({ k: 1 })).toBe("ok")
    expect(runs).toBe(2)
  })
})

describe("applyTask with audit_receipt", () => {
  const yaml = (task: string, section = `audit_receipt:\n  signing_key: ${KEY}\n`) =>
    `transition:\n  agent_id: reporter\n  policy_version: v1\n${section}tasks:\n  report:\n${task}`

  it("audit_receipt.auto signs completed and failed tasks; the receipts verify and the lease keeps the id", async () => {
    const store = new MemoryReceiptStore()
    const clock = new ManualClock(1_800_000_000)
    const config = loadConfigFromString(yaml("    ledger: true\n    id_from: [day]\n"), {
      ...quiet,
      clock,
      receiptStoreFactory: () => store,
    })
    const report = config.applyTask("report", async (a: { day: string }) => {
      if (a.day === "bad") throw new Error("no data")
      return { rows: 3 }
    })
    await report({ day: "d1" })
    await report({ day: "d1" })
    await expect(report({ day: "bad" })).rejects.toThrow("no data")
    const receipts = await store.list()
    expect(receipts.map((r) => [r.action, r.action_kind, r.request_id, r.status, r.agent_id])).toEqual([
      ["report", "task", "report:day=d1", "completed", "reporter"],
      ["report", "task", "report:day=bad", "failed", "reporter"],
    ])
    expect(receipts[0]?.outputs).toEqual({ rows: 3 })
    expect(receipts[0]?.timestamp).toBe(1_800_000_000)
    expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 2,
    })
    expect(await verifyReceipts(receipts, { hmac: "other-key" })).toMatchObject({ ok: false })
    const ledger = await config.taskLedgerFor("report")
    expect((await ledger?.get("report:day=d1"))?.lease?.receipt_ref).toBe(receipts[0]?.receipt_id)
    // The config's one emitter: tools and tasks would chain into the same agent chain.
    expect(await config.receipts()).toBe(await config.receipts())
  })

  it("ledgered tools sign too (the same emitter): tool and task receipts form one chain that verifies", async () => {
    const store = new MemoryReceiptStore()
    const config = loadConfigFromString(
      yaml("    ledger: true\n") +
        "action_ledger:\n  storage: memory\n  tools: [charge]\ntools:\n  charge:\n    side_effect_class: read\n",
      { ...quiet, receiptStoreFactory: () => store },
    )
    const charge = config.apply("charge", async (a: { amount: number }) => a.amount)
    await charge({ amount: 5 }, { toolCallId: "c1" })
    await config.applyTask("report", async () => "done")({ day: "d" })
    const receipts = await store.list()
    expect(receipts.map((r) => [r.action, r.action_kind, r.status])).toEqual([
      ["charge", "tool", "completed"],
      ["report", "task", "completed"],
    ])
    expect(receipts.map((r) => r.chain?.seq)).toEqual([0, 1])
    expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 2,
    })
  })

  it("audit_receipt: false on a task, or auto: false, signs nothing", async () => {
    for (const [task, section] of [
      ["    ledger: true\n    audit_receipt: false\n", undefined],
      ["    ledger: true\n", `audit_receipt:\n  signing_key: ${KEY}\n  auto: false\n`],
    ] as const) {
      const store = new MemoryReceiptStore()
      const config = loadConfigFromString(yaml(task, section), { ...quiet, receiptStoreFactory: () => store })
      await config.applyTask("report", async () => 1)({})
      expect(await store.list()).toEqual([])
    }
  })

  it("signing_key_env is read stripped, as the original reads it: a trailing newline signs with the same key", async () => {
    const section = "audit_receipt:\n  signing_key_env: RECEIPT_KEY\n"
    const store = new MemoryReceiptStore()
    const env = { RECEIPT_KEY: ` \t${KEY}\n` }
    const config = loadConfigFromString(yaml("    ledger: true\n", section), {
      ...quiet,
      env,
      receiptStoreFactory: () => store,
    })
    expect(config.resolved.signingKey).toBe(KEY)
    await config.applyTask("report", async () => 1)({})
    expect(await verifyReceipts(await store.list(), { hmac: KEY })).toMatchObject({ ok: true, valid: 1 })
    // Only whitespace is not a key: "Environment variable ... is not set", as in the original.
    const e = catchError(() =>
      loadConfigFromString(yaml("    ledger: true\n", section), { env: { RECEIPT_KEY: " \n" } }),
    )
    expect(e).toBeInstanceOf(ConfigError)
    expect(String(e)).toContain("environment variable 'RECEIPT_KEY' is not set")
  })

  it("audit_receipt: true on a task without a ledger is a ConfigError naming the key", () => {
    const e = catchError(() =>
      loadConfigFromString(
        yaml("    ledger: false\n    audit_receipt: true\n", `audit_receipt:\n  signing_key: ${KEY}\n`),
        quiet,
      ),
    )
    expect(e).toBeInstanceOf(ConfigError)
    expect(e).toMatchObject({ path: ["tasks", "report", "audit_receipt"] })
    expect(String(e)).toContain("needs its ledger")
  })

  it("receipts without a signing key or without transition.agent_id are ConfigErrors at applyTask", () => {
    const noKey = loadConfigFromString(yaml("    ledger: true\n", "audit_receipt:\n  auto: true\n"), quiet)
    const e1 = catchError(() => noKey.applyTask("report", async () => 1))
    expect(e1).toBeInstanceOf(ConfigError)
    expect(e1).toMatchObject({ path: ["audit_receipt", "signing_key_env"] })
    const noAgent = loadConfigFromString(
      `audit_receipt:\n  signing_key: ${KEY}\ntasks:\n  report:\n    ledger: true\n`,
      quiet,
    )
    const e2 = catchError(() => noAgent.applyTask("report", async () => 1))
    expect(e2).toBeInstanceOf(ConfigError)
    expect(String(e2)).toContain("transition.agent_id")
  })

  it("a file receipt store without a factory is a ConfigError saying where to get one", async () => {
    const config = loadConfigFromString(
      yaml("    ledger: true\n", `audit_receipt:\n  signing_key: ${KEY}\n  storage: file\n  path: r.jsonl\n`),
      quiet,
    )
    await expect(config.applyTask("report", async () => 1)({})).rejects.toThrow(/receiptStoreFactory/)
  })
})

describe("task config errors", () => {
  it("a task store other than memory needs a factory, and says where to get one", async () => {
    const config = loadConfigFromString(
      "task_ledger:\n  storage: file\n  path: t.json\n  tasks: [report]\n",
      quiet,
    )
    const report = config.applyTask("report", async () => 1)
    const e = await report({}).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(ConfigError)
    expect(String(e)).toMatch(/taskStoreFactory.*loadConfigFromString|loadConfig\(\)/)
  })

  it("in_flight_ttl on the task ledger is a ConfigError (task rows never expire), not ignored", () => {
    const e = catchError(() =>
      loadConfigFromString("task_ledger:\n  storage: redis\n  url: redis://x\n  in_flight_ttl: 60\n", quiet),
    )
    expect(e).toMatchObject({ path: ["task_ledger", "in_flight_ttl"] })
    const e2 = catchError(() =>
      loadConfigFromString(
        "tasks:\n  t:\n    ledger: {storage: redis, url: 'redis://x', in_flight_ttl: 60}\n",
        quiet,
      ),
    )
    expect(e2).toMatchObject({ path: ["tasks", "t", "ledger", "in_flight_ttl"] })
  })

  it("dispatch_lookup is the action ledger's, on Redis stores only: elsewhere a ConfigError, not ignored", () => {
    const e = catchError(() =>
      loadConfigFromString(
        "task_ledger:\n  storage: redis\n  url: redis://x\n  dispatch_lookup: scan\n",
        quiet,
      ),
    )
    expect(e).toMatchObject({ path: ["task_ledger", "dispatch_lookup"], line: 4 })
    const e2 = catchError(() =>
      loadConfigFromString(
        "action_ledger:\n  storage: file\n  path: l.json\n  dispatch_lookup: scan\n",
        quiet,
      ),
    )
    expect(e2).toMatchObject({ path: ["action_ledger", "dispatch_lookup"], line: 4 })
    const e3 = catchError(() =>
      loadConfigFromString(
        "action_ledger:\n  storage: redis\n  url: redis://x\n  dispatch_lookup: all\n",
        quiet,
      ),
    )
    expect(e3).toMatchObject({ path: ["action_ledger", "dispatch_lookup"], line: 4 })
    expect(() =>
      loadConfigFromString(
        "action_ledger:\n  storage: redis\n  url: redis://x\n  dispatch_lookup: scan\n",
        quiet,
      ),
    ).not.toThrow()
  })
})

describe("instrument with tasks", () => {
  it("applies tasks: names with applyTask and tools: names with apply", async () => {
    const config = loadConfigFromString(
      "action_ledger:\n  storage: memory\n  tools: [charge]\ntasks:\n  nightly_report:\n    id_from: [day]\n",
      quiet,
    )
    let reports = 0
    let charges = 0
    const fns = config.instrument({
      nightly_report: async (args: { day: string }, ctx: TaskContext) => {
        reports++
        return `${args.day}@${ctx.requestId}`
      },
      charge: async (args: { amount: number }) => {
        charges++
        return args.amount
      },
    })
    expectTypeOf(fns.nightly_report).toEqualTypeOf<ConfiguredTask<{ day: string }, Promise<string>>>()
    expectTypeOf(fns.charge).toEqualTypeOf<ConfiguredTool<{ amount: number }, Promise<number>>>()
    expect(fns.nightly_report.taskName).toBe("nightly_report")
    expect(fns.charge.toolName).toBe("charge")
    expect(await fns.nightly_report({ day: "d1" })).toBe("d1@nightly_report:day=d1")
    expect(await fns.nightly_report({ day: "d1" })).toBe("d1@nightly_report:day=d1")
    expect(reports).toBe(1)
    await fns.charge({ amount: 5 }, { toolCallId: "c1" })
    await fns.charge({ amount: 5 }, { toolCallId: "c1" })
    expect(charges).toBe(1)
  })

  it("a name under both tools: and tasks: is a ConfigError at the task's line (the original wraps a tool)", () => {
    const config = loadConfigFromString("tools:\n  both: {}\ntasks:\n  both:\n    ledger: true\n", quiet)
    const e = catchError(() => config.instrument({ both: async () => 1 }))
    expect(e).toBeInstanceOf(ConfigError)
    expect(String(e)).toContain("'tools.both' and 'tasks.both'")
    // Placed like every other ConfigError: at the key under tasks:.
    expect(e).toMatchObject({ path: ["tasks", "both"], line: 4, column: 3 })
    expect(String(e)).toContain("mycelium.yaml:4:3 at 'tasks.both'")
    // Each explicit call still works: the caller said which one it means.
    expect(config.applyTask("both", async () => 1).taskName).toBe("both")
  })
})

function catchError(fn: () => unknown): unknown {
  try {
    fn()
  } catch (e) {
    return e
  }
  throw new Error("expected an error")
}
