// `pythonLock`: the file stores also hold the original's lock, flock(2) on `<path>.lock`, so a Python worker and
// this package can write one file at the same moment without undoing each other's rows. The Python writer here is
// the original's LockedJsonDictFile.read_modify_write, line for line (fcntl.flock, load, change, temp file, fsync,
// os.replace). `npm run interop:python` races the real original the same way.
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage, LedgerFileLockTimeoutError } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { ConfigError, loadConfigFromString } from "../../src/core/config/index.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { childBundles } from "../child-bundle.ts"
import { cliRunner } from "../cli/run-cli.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-pylock-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const CHILD = fileURLToPath(new URL("./file-lock-child.ts", import.meta.url))
const bundled = childBundles()
const run = cliRunner(process.cwd())

// `n` rows, one flock each. `hold` seconds between reading the file and writing it back (under the flock): anyone
// writing meanwhile without the flock is undone. Prints "ready" once it holds the first lock and has read the file.
const PY_WRITER = `
import fcntl, json, os, sys, time
path, n, prefix, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
for i in range(n):
    with open(path + ".lock", "a+", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            data = {}
            if os.path.exists(path):
                with open(path, "r", encoding="utf-8") as f:
                    data = json.load(f)
            if i == 0:
                print("ready", flush=True)
            time.sleep(hold)
            rid = f"{prefix}{i}"
            data[rid] = {"request_id": rid, "tool": "t", "args": [], "kwargs": {}, "status": "completed",
                         "terminal_outcome": "COMPLETED", "fence": 1, "result": i, "error": None,
                         "started_at": 1767225600.5, "finished_at": 1767225601.5, "lease_until": None,
                         "owner": "py:1"}
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, default=str)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
`

const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
/** Whether the flock on `lock` is free right now (flock -n fails with 1 while someone holds it). */
const flockFree = (lock: string) => spawnSync("flock", ["-n", lock, "true"]).status === 0

/** A process holding the flock on `lock` until it exits; resolves once it holds it. */
async function holdExternally(lock: string, seconds: number): Promise<ChildProcess> {
  const holder = spawn("flock", ["-o", lock, "sh", "-c", `echo held; sleep ${seconds}; echo releasing`])
  await new Promise<void>((r) => holder.stdout.once("data", () => r()))
  return holder
}

describe("FileLedgerStorage with pythonLock", () => {
  it("a Python writer and this store write one file at once: every row of both is kept", async () => {
    const path = join(dir, "race.json")
    const storage = new FileLedgerStorage(path, { pythonLock: true })
    const n = 150
    const py = spawn("python3", ["-c", PY_WRITER, path, String(n), "py-", "0"])
    let pyErr = ""
    py.stderr.on("data", (d) => {
      pyErr += d
    })
    const pyDone = exited(py)
    // Both write at once: this store starts once the Python writer holds its first lock.
    await new Promise<void>((r) => py.stdout.once("data", () => r()))
    for (let i = 0; i < n; i++) await storage.set(newEntry({ requestId: `ts-${i}`, tool: "t" }, 1))
    expect(await pyDone, pyErr).toBe(0)
    const rows = Object.keys(JSON.parse(readFileSync(path, "utf8")) as object)
    expect(rows.filter((k) => k.startsWith("py-"))).toHaveLength(n)
    expect(rows.filter((k) => k.startsWith("ts-"))).toHaveLength(n)
  })

  it("waits while the flock is held, and writes once it is released", async () => {
    const path = join(dir, "wait.json")
    const storage = new FileLedgerStorage(path, { pythonLock: true })
    const events: string[] = []
    const holder = await holdExternally(`${path}.lock`, 0.5)
    // Told while the holder still holds the flock (its exit event came after the write once, under load).
    holder.stdout?.on("data", (d) => String(d).includes("releasing") && events.push("releasing"))
    const done = exited(holder)
    await storage.set(newEntry({ requestId: "after", tool: "t" }, 1))
    events.push("written")
    await done
    expect(events).toEqual(["releasing", "written"])
    expect((await storage.get("after"))?.requestId).toBe("after")
  })

  it("a flock held past lockTimeout fails the write with LedgerFileLockTimeoutError; nothing is written", async () => {
    const path = join(dir, "timeout.json")
    const storage = new FileLedgerStorage(path, { pythonLock: true, lockTimeout: 0.3 })
    const holder = await holdExternally(`${path}.lock`, 5)
    try {
      const e = await storage.set(newEntry({ requestId: "x", tool: "t" }, 1)).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(LedgerFileLockTimeoutError)
      expect(e).toMatchObject({ code: "ledger_file_lock_timeout", lockPath: `${path}.lock` })
      expect(existsSync(path)).toBe(false)
    } finally {
      holder.kill("SIGKILL")
    }
  })

  it("a writer killed while it holds the flock leaves it free (its pipe closes with it)", async () => {
    const path = join(dir, "killed.json")
    const child = spawn(process.execPath, [bundled(CHILD), path, "python-lock"], {
      env: { ...process.env, MYCELIUM_TEST_LOCK_PARK: "lock-held" },
    })
    await new Promise<void>((r) => child.stderr.on("data", (d) => String(d).includes("PARKED") && r()))
    expect(flockFree(`${path}.lock`)).toBe(false)
    child.kill("SIGKILL")
    await exited(child)
    let free = false
    for (let i = 0; i < 100 && !free; i++) {
      free = flockFree(`${path}.lock`)
      if (!free) await new Promise((r) => setTimeout(r, 20))
    }
    expect(free).toBe(true)
    // The next writer with pythonLock takes both locks and writes.
    const storage = new FileLedgerStorage(path, { pythonLock: true, lockTimeout: 5 })
    await storage.set(newEntry({ requestId: "next", tool: "t" }, 1))
    expect((await storage.get("next"))?.requestId).toBe("next")
  })

  it("frees the flock as the write returns, even if this process blocks right after (no deadlock)", async () => {
    const path = join(dir, "blocking.json")
    const storage = new FileLedgerStorage(path, { pythonLock: true })
    await storage.set(newEntry({ requestId: "before", tool: "t" }, 1))
    // A synchronous spawn blocks this event loop: a Python worker run that way must get the lock at once.
    expect(spawnSync("flock", ["-w", "2", `${path}.lock`, "true"]).status).toBe(0)
  })

  it("without pythonLock the flock is not taken (a store alone keeps its one lock file)", async () => {
    const path = join(dir, "plain.json")
    const holder = await holdExternally(`${path}.lock`, 5)
    try {
      const storage = new FileLedgerStorage(path, { lockTimeout: 0.3 })
      await storage.set(newEntry({ requestId: "plain", tool: "t" }, 1))
      expect((await storage.get("plain"))?.requestId).toBe("plain")
    } finally {
      holder.kill("SIGKILL")
    }
  })
})

describe("FileTaskStore with pythonLock", () => {
  it("holds the original's flock on the rows file, not on its own leases sidecar", async () => {
    const path = join(dir, "tasks.json")
    const tasks = new TaskLedger({ storage: new FileTaskStore(path, { pythonLock: true, lockTimeout: 0.3 }) })
    let runs = 0
    const report = tasks.task({ name: "report" }, async () => ++runs)
    const holder = await holdExternally(`${path}.lock`, 5)
    try {
      const e = await report({ day: "d" }).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(LedgerFileLockTimeoutError)
      expect(runs).toBe(0)
    } finally {
      holder.kill("SIGKILL")
      await exited(holder)
    }
    // The sidecar's own flock is never taken: held by someone else, it does not stop the task.
    const sidecar = await holdExternally(`${path}.leases.json.lock`, 5)
    try {
      expect(await report({ day: "d" })).toBe(1)
      expect(await report({ day: "d" })).toBe(1)
      expect(runs).toBe(1)
    } finally {
      sidecar.kill("SIGKILL")
    }
  })
})

describe("mycelium.yaml python_lock and the CLI's --python-lock", () => {
  it("config: python_lock: true makes a configured tool wait for the original's flock", async () => {
    const path = join(dir, "cfg-ledger.json")
    const yaml = join(dir, "python-lock.yaml")
    writeFileSync(
      yaml,
      `transition: {agent_id: a, policy_version: "1"}\naction_ledger:\n  storage: file\n  path: ${path}\n` +
        `  python_lock: true\ntools:\n  pay: {ledger: true, side_effect_class: keyed_mutate}\n`,
    )
    const config = await loadConfig(yaml, { onWarning: () => {} })
    const { pay } = config.instrument({ pay: async (a: { n: number }) => a.n })
    const events: string[] = []
    const holder = await holdExternally(`${path}.lock`, 0.5)
    holder.stdout?.on("data", (d) => String(d).includes("releasing") && events.push("releasing"))
    const done = exited(holder)
    expect(await pay({ n: 7 }, { toolCallId: "c1" })).toBe(7)
    events.push("called")
    await done
    expect(events).toEqual(["releasing", "called"])
    await config.close()
  })

  it("python_lock is for file stores only: elsewhere a ConfigError naming the key", () => {
    const bad = [
      [
        "action_ledger:\n  storage: redis\n  url: redis://x\n  python_lock: true\n",
        ["action_ledger", "python_lock"],
      ],
      ["state_flush:\n  storage: memory\n  python_lock: true\n", ["state_flush", "python_lock"]],
    ] as const
    for (const [text, path] of bad) {
      const e = (() => {
        try {
          loadConfigFromString(text, { env: {}, onWarning: () => {} })
        } catch (x) {
          return x
        }
      })()
      expect(e).toBeInstanceOf(ConfigError)
      expect(e).toMatchObject({ path })
    }
  })

  it("CLI: a release with --python-lock waits for a Python writer and keeps its row", async () => {
    const path = join(dir, "ops.json")
    const storage = new FileLedgerStorage(path)
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const pay = ledger.tool(
      {
        name: "pay",
        binding: { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      },
      async (_a: { n: number }, tx) =>
        tx.sideEffect(async () => {
          throw new Error("connection reset")
        }),
    )
    await pay({ n: 1 }, { toolCallId: "stuck" }).catch(() => {})
    const id = ((await storage.findByDispatchId("stuck"))[0] as { requestId: string }).requestId
    const py = spawn("python3", ["-c", PY_WRITER, path, "1", "py-row-", "2.5"])
    await new Promise<void>((r) => py.stdout.once("data", () => r()))
    const pyDone = exited(py)
    const rel = run([
      "transitions",
      "release",
      id,
      "--file",
      path,
      "--python-lock",
      "--verified",
      "completed",
      "--result-json",
      '{"ok": true}',
      "--by",
      "ops",
      "--reason",
      "charged once at the provider",
    ])
    expect(rel.code, rel.err).toBe(0)
    expect(await pyDone).toBe(0)
    const rows = JSON.parse(readFileSync(path, "utf8")) as Record<string, Record<string, unknown>>
    expect(rows["py-row-0"]).toBeDefined()
    expect(rows[id]).toMatchObject({ operator_resolution: "completed", result: { ok: true } })
  })

  it("CLI: --python-lock with another store is a usage error (exit 2), not a lock silently not taken", () => {
    const r = run(["transitions", "list", "--redis-url", "redis://127.0.0.1:1", "--python-lock"])
    expect(r.code).toBe(2)
    expect(r.err).toContain("--python-lock applies to a ledger file")
    const t = run(["tasks", "list", "--redis-url", "redis://127.0.0.1:1", "--python-lock"])
    expect(t.code).toBe(2)
    expect(t.err).toContain("--python-lock applies to a task file")
  })
})
