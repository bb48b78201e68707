// Task stores on real backends: the conformance suite per store, a worker SIGKILLed mid-task and reclaimed after
// its lease, and rows shared with the Python original's file layout.
import { execFileSync, spawn } from "node:child_process"
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { testTaskStore } from "../../src/conformance.ts"
import type { JsonValue } from "../../src/core/index.ts"
import { pythonDumps } from "../../src/core/python-json.ts"
import { deriveTaskRequestId, TaskLedger, TaskLedgerPendingError } from "../../src/tasks.ts"
import { childBundles } from "../child-bundle.ts"
import { killWhenReady } from "./crash/kill-when-ready.ts"
import { openTaskStore, type TaskBackend } from "./crash/task-storage.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const bundled = childBundles()

const dirs: string[] = []
const tmpFile = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), "mycelium-tasks-"))
  dirs.push(dir)
  return join(dir, name)
}
const tables: string[] = []
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  if (!tables.length) return
  const pool = neonPool(undefined, 1)
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}`)
  await pool.end()
})
const newTable = () => {
  const t = `task_test_${runTag("t").replaceAll("-", "_")}`.toLowerCase()
  tables.push(t)
  return t
}

testTaskStore("file", () => {
  const path = tmpFile("tasks.json")
  return {
    storage: new FileTaskStore(path, { fsync: false }),
    peer: new FileTaskStore(path, { fsync: false }),
  }
})

testTaskStore("upstash", async () => {
  await requireUpstash()
  const prefix = `mycelium-test:${runTag("tasks")}:task:`
  return {
    storage: new UpstashTaskStore({ redis: upstashClient(), prefix }),
    peer: new UpstashTaskStore({ redis: upstashClient(), prefix }),
  }
})

// A prefix without the trailing ':': the original's tombstone and lease keys (`{prefix}-tomb:{id}`) then start with
// the prefix, so a scan of `{prefix}*` meets them beside the rows.
testTaskStore("upstash (prefix without ':')", async () => {
  await requireUpstash()
  const prefix = `mycelium-test-${runTag("tasks")}-task`
  return {
    storage: new UpstashTaskStore({ redis: upstashClient(), prefix }),
    peer: new UpstashTaskStore({ redis: upstashClient(), prefix }),
  }
})

describe("upstash task list", () => {
  it("lists a task whose row key expired (the original's in-flight TTL) from its tombstone, still in flight", async () => {
    await requireUpstash()
    const redis = upstashClient()
    const prefix = `mycelium-test:${runTag("tasks-ttl")}:task:`
    const ledger = new TaskLedger({
      storage: new UpstashTaskStore({ redis, prefix }),
      leaseRenewInterval: 0,
      onWarning: () => {},
    })
    let started = false
    const stuck = ledger.task({ name: "stuck" }, () => {
      started = true
      return new Promise<never>(() => {})
    })
    void stuck({}, { taskId: "t-ttl" })
    await ledger.task({ name: "done" }, async () => 1)({}, { taskId: "t-done" })
    while (!started) await new Promise((r) => setTimeout(r, 2))
    expect(await redis.del(`${prefix}t-ttl`)).toBe(1)
    const listed = await ledger.list()
    expect(listed.map((t) => [t.row.request_id, t.row.status]).sort()).toEqual([
      ["t-done", "completed"],
      ["t-ttl", "in-flight"],
    ])
  })
})

testTaskStore("neon", async () => {
  const a = neonPool(undefined, 4)
  const b = neonPool(undefined, 4)
  await requirePostgres(a)
  const table = newTable()
  const storage = new NeonTaskStore({ pool: a, table })
  await storage.migrate()
  return {
    storage,
    peer: new NeonTaskStore({ pool: b, table }),
    cleanup: async () => {
      await a.end()
      await b.end()
    },
  }
})

const runsIn = (file: string) =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []

for (const backend of ["file", "upstash", "neon"] as const satisfies readonly TaskBackend[]) {
  describe(`task worker SIGKILLed mid-run (${backend})`, () => {
    it("is pending while its lease lasts, then reclaimed by another worker and run exactly once more", async () => {
      if (backend === "upstash") await requireUpstash()
      const where =
        backend === "file" ? tmpFile("tasks.json") : backend === "neon" ? newTable() : runTag("crash")
      const runs = tmpFile("runs.log")
      const taskId = `T-${runTag("kill")}`
      await killWhenReady("test/adapters/crash/task-child.ts", [backend, where, taskId, runs, "2"])

      const { storage, close } = await openTaskStore(backend, where)
      try {
        const ledger = new TaskLedger({
          storage,
          leaseTtl: 2,
          owner: "survivor",
          pollInterval: 0.1,
          onWarning: () => {},
        })
        const job = ledger.task({ name: "nightly_report" }, async () => {
          appendFileSync(runs, "survivor\n")
          return "report"
        })
        await expect(job({ day: "2026-12-01" }, { taskId })).rejects.toBeInstanceOf(TaskLedgerPendingError)
        // Waiting callers reclaim once the dead worker's lease lapses; of several, exactly one runs the body.
        const results = await Promise.all(
          [1, 2, 3].map(() => job({ day: "2026-12-01" }, { taskId, wait: true })),
        )
        expect(results).toEqual(["report", "report", "report"])
        expect(runsIn(runs)).toEqual(["child", "survivor"])
        const row = await ledger.get(taskId)
        expect(row?.row.status).toBe("completed")
        expect(row?.lease).toMatchObject({ fence: 2, owner: "survivor" })
      } finally {
        await close()
      }
    }, 60_000)
  })
}

for (const backend of ["file", "upstash", "neon"] as const satisfies readonly TaskBackend[]) {
  it(`${backend}: 5 OS processes x 10 concurrent callers of one live task run it once`, async () => {
    if (backend === "upstash") await requireUpstash()
    const where =
      backend === "file" ? tmpFile("tasks.json") : backend === "neon" ? newTable() : runTag("race")
    if (backend === "neon") await (await openTaskStore("neon", where)).close() // migrate before the race
    const effects = tmpFile("effects.log")
    const go = tmpFile("go")
    const taskId = `R-${runTag("race")}`
    const children = Array.from({ length: 5 }, () =>
      spawn(process.execPath, [
        bundled("test/adapters/crash/task-race-child.ts"),
        backend,
        where,
        taskId,
        effects,
        go,
        "10",
      ]),
    )
    const outputs = children.map(
      (c) =>
        new Promise<string>((resolve, reject) => {
          let out = ""
          let err = ""
          c.stdout.on("data", (d) => {
            out += String(d)
          })
          c.stderr.on("data", (d) => {
            err += String(d)
          })
          c.once("close", (code) =>
            code === 0 ? resolve(out) : reject(new Error(`child exited ${code}: ${err}`)),
          )
        }),
    )
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            let err = ""
            const on = (d: Buffer) => {
              err += String(d)
              if (err.includes("ready")) {
                c.stderr.off("data", on)
                resolve()
              }
            }
            c.stderr.on("data", on)
          }),
      ),
    )
    appendFileSync(go, "go\n")
    const summaries = (await Promise.all(outputs)).map(
      (o) => JSON.parse(o.trim()) as { ok: number; pending: number; other: string[] },
    )
    expect(runsIn(effects)).toHaveLength(1)
    // Callers that arrive while it runs are refused; callers that arrive after it finished replay its result.
    const ok = summaries.reduce((n, s) => n + s.ok, 0)
    expect(ok).toBeGreaterThanOrEqual(1)
    expect(ok + summaries.reduce((n, s) => n + s.pending, 0)).toBe(50)
    expect(summaries.flatMap((s) => s.other)).toEqual([])
  }, 90_000)
}

describe("rows shared with the Python original (file layout)", () => {
  const script = new URL("../../scripts/python/task_ledger_file.py", import.meta.url).pathname
  const py = (...args: string[]) => execFileSync("python3", [script, ...args], { encoding: "utf8" })

  it("request ids derived here equal the original's for awkward arguments", () => {
    const cases: Array<[Record<string, unknown>, string[] | null]> = [
      [{ day: "2026-12-01", n: 1.5, big: 1e16, tiny: 2.5e-8, neg: -0.0 }, null],
      [{ note: "café ☕ 𝄞", nested: { z: [1, { b: true, a: null }], y: "" } }, null],
      [{ region: "eu", flag: true, none: null, n: 2 }, ["flag", "none", "n", "missing"]],
      [{ region: { a: [1, "x", true, null, -0.0], "it's": "é\n" }, day: ["d", 2.5] }, ["region", "day"]],
      [{ run_id: 7, x: 1 }, null],
      [{ task_id: 42 }, null],
      [{}, null],
    ]
    for (const [kwargs, idFrom] of cases) {
      // Sent in Python's number forms, so 1e16 and -0.0 reach Python as the floats they are here.
      const expected = py("derive", "t", pythonDumps(kwargs), JSON.stringify(idFrom)).trim()
      expect(deriveTaskRequestId({ task: "t", kwargs: kwargs as Record<string, JsonValue>, idFrom })).toBe(
        expected,
      )
    }
  })

  it("a completed row the original wrote is replayed here without running", async () => {
    const path = tmpFile("tasks.json")
    const id = py(
      "derive",
      "nightly_report",
      JSON.stringify({ day: "2026-12-01", region: "eu" }),
      '["region","day"]',
    ).trim()
    py(
      "write",
      path,
      JSON.stringify({
        request_id: id,
        task: "nightly_report",
        args: [],
        kwargs: { day: "2026-12-01", region: "eu" },
        status: "completed",
        result: { rows: 12 },
        error: null,
        started_at: 1767225600.5,
        finished_at: 1767225601.25,
      }),
    )
    const ledger = new TaskLedger({ storage: new FileTaskStore(path) })
    let runs = 0
    const report = ledger.task({ name: "nightly_report", idFrom: ["region", "day"] }, async () => ++runs)
    expect(await report({ day: "2026-12-01", region: "eu" })).toEqual({ rows: 12 })
    expect(runs).toBe(0)
  })

  it("an in-flight row the original wrote (no lease) is pending until an operator releases it", async () => {
    const path = tmpFile("tasks.json")
    py(
      "write",
      path,
      JSON.stringify({
        request_id: "T-9",
        task: "t",
        args: [],
        kwargs: { task_id: "T-9" },
        status: "in-flight",
        started_at: 1767225600.5,
      }),
    )
    const ledger = new TaskLedger({ storage: new FileTaskStore(path), onWarning: () => {} })
    const t = ledger.task("t", async () => "ran")
    await expect(t({}, { taskId: "T-9" })).rejects.toThrow(/without a lease/)
    await ledger.release("T-9", { verified: "not_executed", by: "ops", reason: "python worker died" })
    expect(await t({}, { taskId: "T-9" })).toBe("ran")
  })

  it("a row the original wrote keeps 100.0 and NaN when this package writes another task", async () => {
    const path = tmpFile("tasks.json")
    const row = (id: string) =>
      `{"request_id": "${id}", "task": "t", "args": [], "kwargs": {"task_id": "${id}"}, "status": "completed", ` +
      `"result": {"amount": 100.0, "tiny": 1e-05, "x": NaN}, "error": null, "started_at": 1767225600.0, "finished_at": null}`
    py("write", path, row("P-1"))
    const ledger = new TaskLedger({ storage: new FileTaskStore(path), onWarning: () => {} })
    const t = ledger.task("t", async () => "ran")
    // Read as json.loads reads it (JSON.parse refuses the bare NaN), and replayed without running.
    expect(await t({}, { taskId: "P-1" })).toEqual({ amount: 100, tiny: 1e-5, x: Number.NaN })
    expect(await t({}, { taskId: "T-2" })).toBe("ran")
    const back = execFileSync(
      "python3",
      [
        "-c",
        "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d['P-1']['result']), sorted(d))",
        path,
      ],
      { encoding: "utf8" },
    )
    expect(back.trim()).toBe(`{"amount": 100.0, "tiny": 1e-05, "x": NaN} ['P-1', 'T-2']`)
    // The whole file is what the original's json.dump(indent=2) writes for these rows.
    const dumped = execFileSync(
      "python3",
      ["-c", "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), indent=2), end='')", path],
      { encoding: "utf8" },
    )
    expect(readFileSync(path, "utf8")).toBe(dumped)
  })

  it("rows written here (and their sidecar leases) are read by the original's strict TaskLedgerEntry", async () => {
    const path = tmpFile("tasks.json")
    const ledger = new TaskLedger({ storage: new FileTaskStore(path), onWarning: () => {} })
    await ledger.task("ok", async () => ({ n: 1, s: "café" }))({ day: "d" }, { runId: "r-1" })
    await ledger
      .task("bad", async () => {
        throw new Error("boom")
      })({}, { taskId: "B-1" })
      .catch(() => {})
    const rows = py("read", path)
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
    expect(rows).toEqual([
      expect.objectContaining({ request_id: "ok:r-1", status: "completed", result: { n: 1, s: "café" } }),
      expect.objectContaining({ request_id: "B-1", status: "failed", error: "Error: boom", result: null }),
    ])
    expect(JSON.parse(readFileSync(`${path}.leases.json`, "utf8"))["ok:r-1"]).toMatchObject({ fence: 1 })
  })
})
