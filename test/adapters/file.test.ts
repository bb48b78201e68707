// The JSON-file ledger store: conformance, Python file-format interop, corruption handling, cross-process race.
import { spawn, spawnSync } from "node:child_process"
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { hostname, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage, LedgerFileCorruptError } from "../../src/adapters/file.ts"
import { ActionLedger, LedgerConfigError } from "../../src/core/index.ts"
import { childBundles } from "../child-bundle.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-file-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshPath = () => join(root, `l${n++}`, "ledger.json")
const pidns = (() => {
  try {
    return readlinkSync("/proc/self/ns/pid")
  } catch {
    return null
  }
})()
const FIXTURE = fileURLToPath(new URL("../fixtures/python-ledger.json", import.meta.url))
const WORKER = fileURLToPath(new URL("./file-race-worker.ts", import.meta.url))
const bundled = childBundles()

function withFile(text: string): string {
  const path = freshPath()
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
  return path
}

// The LedgerStorage conformance suite over this store is file-conformance.test.ts (it runs in Deno and Bun too).

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
const shape = (v: Json | undefined): string =>
  v === undefined ? "missing" : v === null ? "null" : Array.isArray(v) ? "array" : typeof v

describe("Python file format", () => {
  it("loads the original's file, legacy rows included", async () => {
    const path = withFile(readFileSync(FIXTURE, "utf8"))
    const s = new FileLedgerStorage(path)
    expect(await s.get("sp:completed")).toMatchObject({
      terminalOutcome: "COMPLETED",
      fence: 1,
      result: { id: "pi_1", amount: 100.5, tiny: 1e-7 },
      kwargs: { recipient: "acct_é", tool_call_id: "call_py_1" },
      decision: { allowed: true, deniedReasons: [] },
      effectProtocolRequired: true,
    })
    expect(await s.get("legacy:1")).toMatchObject({
      terminalOutcome: "IN_FLIGHT", // missing in a legacy row; the gates infer COMPLETED from status
      status: "completed",
      fence: 0,
      schemaVersion: 1,
      idempotencyKey: "legacy:1",
      effectId: "legacy:1",
    })
    expect((await s.findByDispatchId("call_py_2")).map((e) => e.requestId)).toEqual(["sp:unknown"])
    const ids: string[] = []
    for await (const e of s.list()) ids.push(e.requestId)
    expect(ids).toEqual(["legacy:1", "sp:completed", "sp:inflight", "sp:unknown"])
  })

  it("writes the same keys and value shapes, keeps untouched rows as they were, escapes like json.dumps", async () => {
    const path = withFile(readFileSync(FIXTURE, "utf8"))
    const fixture = JSON.parse(readFileSync(FIXTURE, "utf8")) as Record<string, Record<string, Json>>
    const s = new FileLedgerStorage(path)
    const now = 1_780_000_100.5
    const claimed = await s.tryClaimInflight(
      newEntry(
        { requestId: "ts:new", tool: "send_payment", kwargs: { amount: 1, tool_call_id: "c9", note: "é" } },
        now,
      ),
      60,
      now,
    )
    expect(claimed.outcome).toBe("claimed")
    await s.tryTransition(
      {
        ...claimed.entry,
        terminalOutcome: "COMPLETED",
        status: "completed",
        result: { id: "pi_9", amount: 1.5 },
        finishedAt: now + 1,
        sideEffectBoundary: "crossed",
        effectPhase: "COMMITTED",
        decision: {
          allowed: true,
          verdicts: [{ name: "cap", allowed: true, reason: null }],
          deniedReasons: [],
        },
      },
      { outcomes: ["IN_FLIGHT"], fence: 1 },
    )
    const text = readFileSync(path, "utf8")
    expect(/[\u0080-\uffff]/.test(text)).toBe(false)
    const written = JSON.parse(text) as Record<string, Record<string, Json>>
    // Rows this process did not touch are kept value for value (legacy keys stay missing, floats stay floats).
    for (const id of Object.keys(fixture)) expect(written[id]).toEqual(fixture[id])
    // Byte for byte what the original's `json.dump(data, f, indent=2)` writes for these rows, its floats included.
    const py = spawnSync(
      "python3",
      ["-c", "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), indent=2), end='')", path],
      {
        encoding: "utf8",
      },
    )
    expect(py.status, py.stderr).toBe(0)
    expect(text).toBe(py.stdout)
    const ours = written["ts:new"] as Record<string, Json>
    const theirs = fixture["sp:completed"] as Record<string, Json>
    expect(Object.keys(ours)).toEqual(Object.keys(theirs))
    for (const k of Object.keys(theirs)) {
      if (theirs[k] === null || ours[k] === null) continue
      expect(`${k}:${shape(ours[k])}`).toBe(`${k}:${shape(theirs[k])}`)
    }
    expect(ours.decision).toEqual({
      allowed: true,
      verdicts: [{ name: "cap", allowed: true, reason: null }],
      denied_reasons: [],
    })
  })

  it("python3's json reads a file we wrote back to the same rows", async () => {
    // scripts/services.sh installs python3 where missing; without it this interop check fails rather than skips.
    expect(spawnSync("python3", ["--version"]).status, "python3 is required for this test").toBe(0)
    const path = withFile(readFileSync(FIXTURE, "utf8"))
    const s = new FileLedgerStorage(path)
    await s.set(newEntry({ requestId: "ts:1", tool: "t", kwargs: { q: "naïve ☃ 😀" }, result: 0.1 }, 1.25))
    const r = spawnSync(
      "python3",
      [
        "-c",
        "import json,sys; d=json.load(open(sys.argv[1])); r=d['ts:1']; " +
          "print(json.dumps([sorted(d), r['kwargs']['q'], r['result'], r['started_at'], r['fence'], r['lease_until']]))",
        path,
      ],
      { encoding: "utf8" },
    )
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual([
      ["legacy:1", "sp:completed", "sp:inflight", "sp:unknown", "ts:1"],
      "naïve ☃ 😀",
      0.1,
      1.25,
      0,
      null,
    ])
  })
})

describe("the original's numbers survive this store's rewrites", () => {
  // What Python's json writes and JSON.parse + JSON.stringify would change: the original re-derives a row's args
  // fingerprint from its stored kwargs (its args-drift check), so `100.0` written back as `100` would make its own
  // redispatch of that call look like other arguments.
  const PY_ROW = `
import json, sys
v = {"amount": 100.0, "tiny": 1e-05, "big": 2**60, "exp": 1.5e+16, "nan": float("nan"), "ninf": float("-inf"),
     "s": "NaN: 1.0, \\"q\\" [{"}
row = lambda i: dict(request_id=i, tool="t", status="completed", args=[], kwargs=dict(v, tool_call_id=i), result=v)
json.dump({"py:1": row("py:1"), "py:2": row("py:2")}, open(sys.argv[1], "w"), indent=2)
print(json.dumps(row("py:1")))`
  const pyRows = (path: string): Record<string, string> => {
    const r = spawnSync(
      "python3",
      [
        "-c",
        "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({k: json.dumps(v) for k, v in d.items()}))",
        path,
      ],
      { encoding: "utf8" },
    )
    expect(r.status, r.stderr).toBe(0)
    return JSON.parse(r.stdout) as Record<string, string>
  }

  it("untouched rows go back as the original wrote them; NaN and Infinity are read as json.loads reads them", async () => {
    expect(spawnSync("python3", ["--version"]).status, "python3 is required for this test").toBe(0)
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    const made = spawnSync("python3", ["-c", PY_ROW, path], { encoding: "utf8" })
    expect(made.status, made.stderr).toBe(0)
    const asWritten = made.stdout.trim()
    const s = new FileLedgerStorage(path)
    const row = await s.get("py:1")
    expect(row?.kwargs).toMatchObject({
      amount: 100,
      tiny: 1e-5,
      nan: Number.NaN,
      ninf: Number.NEGATIVE_INFINITY,
    })
    expect(row?.kwargs.s).toBe('NaN: 1.0, "q" [{')
    // Two writes of other rows: the first takes the untouched rows' text from the file, the second from the cache.
    await s.set(newEntry({ requestId: "ts:1", tool: "t", kwargs: { amount: 1 } }, 1))
    await s.set(newEntry({ requestId: "ts:2", tool: "t" }, 2))
    const back = pyRows(path)
    expect(Object.keys(back)).toEqual(["py:1", "py:2", "ts:1", "ts:2"])
    expect(back["py:1"]).toBe(asWritten)
    expect(back["py:2"]).toBe(asWritten.replaceAll("py:1", "py:2"))
    // Another store instance reads the rewritten file the same way.
    expect((await new FileLedgerStorage(path).get("py:2"))?.kwargs).toMatchObject({
      nan: Number.NaN,
      big: 2 ** 60,
    })
  })

  it("a row this store changes is written as JavaScript holds it (documented: 100.0 becomes 100, NaN null)", async () => {
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    expect(spawnSync("python3", ["-c", PY_ROW, path]).status).toBe(0)
    const s = new FileLedgerStorage(path)
    const row = await s.get("py:1")
    await s.set({ ...(row as NonNullable<typeof row>), fence: 1 })
    const back = JSON.parse(pyRows(path)["py:1"] as string) as { kwargs: Record<string, unknown> }
    expect(back.kwargs).toMatchObject({ amount: 100, nan: null, ninf: null, s: 'NaN: 1.0, "q" [{' })
    expect(pyRows(path)["py:2"]).toContain('"amount": 100.0')
  })
})

describe("corrupt files are errors, never an empty ledger (original's defect §9 #13)", () => {
  const cases: Array<[string, string]> = [
    ["truncated JSON", '{\n  "a": {\n    "request_id": "a",'],
    ["empty file", ""],
    ["a JSON array", "[]"],
    ["JSON null", "null"],
    ["a number", "42"],
    ["a row that is not an object", '{"a": 1}'],
    ["a row without request_id", '{"a": {"tool": "t", "status": "completed"}}'],
    // Python's bare NaN is read (see "Python file format"), but only where a value goes.
    ["a bare NaN that is not a value", '{"a": {"request_id": "a", "tool": "t", "status": "completed"} NaN}'],
  ]
  for (const [label, text] of cases) {
    it(`${label}: reads and claims reject with LedgerFileCorruptError, file untouched`, async () => {
      const path = withFile(text)
      const s = new FileLedgerStorage(path)
      const err = await s.get("a").catch((e: unknown) => e)
      expect(err).toBeInstanceOf(LedgerFileCorruptError)
      expect(err).toMatchObject({ name: "LedgerFileCorruptError", code: "ledger_file_corrupt", path })
      await expect(
        s.tryClaimInflight(newEntry({ requestId: "a", tool: "t" }, 1), 60, 1),
      ).rejects.toBeInstanceOf(LedgerFileCorruptError)
      expect(readFileSync(path, "utf8")).toBe(text)
      // The lock is released after the failure: a repaired file works again.
      writeFileSync(path, "{}")
      expect((await s.tryClaimInflight(newEntry({ requestId: "a", tool: "t" }, 1), 60, 1)).outcome).toBe(
        "claimed",
      )
    })
  }

  it("a ledgered tool on a corrupt file fails closed with LedgerFileCorruptError; its body never runs", async () => {
    const path = withFile('{"half": {"request_id": "half", "tool"')
    let runs = 0
    const ledger = new ActionLedger({ storage: new FileLedgerStorage(path), onWarning: () => {} })
    const pay = ledger.tool(
      {
        name: "send_payment",
        binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" },
      },
      async () => ++runs,
    )
    await expect(pay({ amount: 1 }, { toolCallId: "c1" })).rejects.toBeInstanceOf(LedgerFileCorruptError)
    expect(runs).toBe(0)
  })

  it("a missing file is an empty ledger; the directory is created on first write", async () => {
    const path = freshPath()
    const s = new FileLedgerStorage(path)
    expect(await s.get("x")).toBeNull()
    await s.set(newEntry({ requestId: "x", tool: "t" }, 1))
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toEqual(["x"])
  })
})

describe("cross-process lock", () => {
  it("takes over a lock left by a dead process at once", async () => {
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    const dead = spawnSync(process.execPath, ["-e", "process.exit(0)"]).pid as number
    writeFileSync(
      `${path}.lock.ts`,
      JSON.stringify({ pid: dead, host: hostname(), pidns, token: "t", at: Date.now() }),
    )
    const s = new FileLedgerStorage(path, { lockTimeout: 2 })
    await s.set(newEntry({ requestId: "x", tool: "t" }, 1))
    expect((await s.get("x"))?.requestId).toBe("x")
  })

  it("waits out a dead pid of this hostname in another PID namespace (containers of one pod): it may be alive", async () => {
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    const dead = spawnSync(process.execPath, ["-e", "process.exit(0)"]).pid as number
    const lock = { pid: dead, host: hostname(), pidns: "pid:[1]", token: "t", at: Date.now() }
    writeFileSync(`${path}.lock.ts`, JSON.stringify(lock))
    const s = new FileLedgerStorage(path, { lockTimeout: 0.3, staleLockAfter: 30 })
    await expect(s.set(newEntry({ requestId: "x", tool: "t" }, 1))).rejects.toMatchObject({
      code: "ledger_file_lock_timeout",
    })
  })

  it("takes over a lock from another host once it is older than staleLockAfter", async () => {
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    const lock = { pid: 1, host: "elsewhere", token: "t", at: Date.now() - 5_000 }
    writeFileSync(`${path}.lock.ts`, JSON.stringify(lock))
    const s = new FileLedgerStorage(path, { lockTimeout: 2, staleLockAfter: 4 })
    await s.set(newEntry({ requestId: "x", tool: "t" }, 1))
    expect((await s.get("x"))?.requestId).toBe("x")
  })

  it("waits for a live holder, then times out with LedgerFileLockTimeoutError", async () => {
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(
      `${path}.lock.ts`,
      JSON.stringify({ pid: process.pid, host: "elsewhere", token: "t", at: Date.now() }),
    )
    const s = new FileLedgerStorage(path, { lockTimeout: 0.2 })
    await expect(s.set(newEntry({ requestId: "x", tool: "t" }, 1))).rejects.toMatchObject({
      name: "LedgerFileLockTimeoutError",
      code: "ledger_file_lock_timeout",
    })
  })

  it("4 OS processes x 25 concurrent ledgered calls on one file: one execution (x10 dispatch ids)", async () => {
    const path = freshPath()
    mkdirSync(dirname(path), { recursive: true })
    const effects = join(dirname(path), "effects.log")
    writeFileSync(effects, "")
    const ROUNDS = 10
    const go = join(dirname(path), "go")
    let ready = 0
    const children = Array.from({ length: 4 }, (_, i) => {
      const child = spawn(process.execPath, [bundled(WORKER), path, effects, `p${i}`, go, String(ROUNDS)], {
        stdio: ["ignore", "pipe", "pipe"],
      })
      let out = ""
      let err = ""
      child.stdout.on("data", (d) => {
        out += d
      })
      child.stderr.on("data", (d) => {
        err += d
        if (String(d).includes("ready") && ++ready === 4) writeFileSync(go, "")
      })
      return new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
        child.on("close", (code) => resolve({ code, out, err })),
      )
    })
    const runs = await Promise.all(children)
    for (const r of runs) expect(r.code, r.err).toBe(0)
    // One line per execution, written by the effect itself: one per dispatch id, whatever the tool returned.
    const lines = readFileSync(effects, "utf8").split("\n").filter(Boolean)
    const perRound = lines.map((l) => Number(l.split(" ")[0])).sort((a, b) => a - b)
    expect(perRound).toEqual(Array.from({ length: ROUNDS }, (_, i) => i))
    const results = runs.flatMap((r) => JSON.parse(r.out) as Array<{ ok: boolean; r?: unknown; e?: string }>)
    expect(results).toHaveLength(4 * 25 * ROUNDS)
    expect(results.filter((r) => !r.ok)).toEqual([])
    const rows = Object.values(
      JSON.parse(readFileSync(path, "utf8")) as Record<string, { terminal_outcome: string }>,
    )
    expect(rows.map((x) => x.terminal_outcome)).toEqual(Array(ROUNDS).fill("COMPLETED"))
  }, 60_000)
})

describe("the ledger file itself", () => {
  /** One payment tool per ledger path, all counting into one total: two names of one file must run it once. */
  const payments = () => {
    let total = 0
    const pay = (path: string) =>
      new ActionLedger({ storage: new FileLedgerStorage(path), onWarning: () => {} }).tool(
        {
          name: "send_payment",
          binding: { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
        },
        async () => ++total,
      )
    return { pay, runs: () => total }
  }

  it("a symlinked path writes through to its target, which shares its lock", async () => {
    const target = freshPath()
    await new FileLedgerStorage(target).set(newEntry({ requestId: "a", tool: "t" }, 1))
    const link = join(dirname(target), "link.json")
    symlinkSync(target, link)
    const s = new FileLedgerStorage(link)
    expect(s.path).toBe(target)
    await s.set(newEntry({ requestId: "b", tool: "t" }, 1))
    expect(lstatSync(link).isSymbolicLink()).toBe(true)
    expect((await new FileLedgerStorage(target).get("b"))?.requestId).toBe("b")
  })

  it("a link to a target not created yet (or under a linked dir not created yet) is one ledger with it", async () => {
    const base = dirname(freshPath())
    mkdirSync(join(base, "vol"), { recursive: true })
    const target = join(base, "vol", "ledger.json")
    const link = join(base, "ledger.json")
    symlinkSync(target, link) // the shared volume's file is created by the first write
    symlinkSync(join(base, "vol", "d"), join(base, "dir"))
    const { pay, runs } = payments()
    await pay(link)({ amount: 1 }, { requestId: "order-1" })
    expect(lstatSync(link).isSymbolicLink()).toBe(true)
    expect(await pay(target)({ amount: 1 }, { requestId: "order-1" })).toBe(1)
    expect(runs()).toBe(1)
    expect(new FileLedgerStorage(join(base, "dir", "l.json")).path).toBe(join(base, "vol", "d", "l.json"))
  })

  it("a symlink loop is a LedgerConfigError, not a hang", () => {
    const base = dirname(freshPath())
    mkdirSync(base, { recursive: true })
    symlinkSync(join(base, "b"), join(base, "a"))
    symlinkSync(join(base, "a"), join(base, "b"))
    expect(() => new FileLedgerStorage(join(base, "a"))).toThrow(LedgerConfigError)
  })

  it("a `..` in a link's target climbs from the linked dir before it, as the kernel does: one ledger", async () => {
    const base = dirname(freshPath())
    mkdirSync(join(base, "real", "deep"), { recursive: true })
    symlinkSync("real/deep", join(base, "sub"))
    const link = join(base, "ledger.json.link")
    symlinkSync("sub/../ledger.json", link) // the kernel opens real/ledger.json, not ./ledger.json
    const target = join(base, "real", "ledger.json")
    const { pay, runs } = payments()
    await pay(link)({ amount: 1 }, { requestId: "order-1" }) // creates the target
    expect(await pay(target)({ amount: 1 }, { requestId: "order-1" })).toBe(1)
    expect(runs()).toBe(1)
    expect(new FileLedgerStorage(link).path).toBe(realpathSync.native(link))
  })

  it("a `..` in the ledger path after a linked dir climbs from its target, as the kernel does: one ledger", async () => {
    const base = dirname(freshPath())
    mkdirSync(join(base, "vol", "deep"), { recursive: true })
    mkdirSync(join(base, "app"))
    symlinkSync(join(base, "vol", "deep"), join(base, "app", "data"))
    const target = join(base, "vol", "ledger.json")
    const { pay, runs } = payments()
    // The kernel opens vol/ledger.json. join() would drop data/.. as text, as resolve() did: built by hand.
    const named = `${join(base, "app", "data")}/../ledger.json`
    expect(new FileLedgerStorage(named).path).toBe(target)
    await pay(named)({ amount: 1 }, { requestId: "order-1" })
    expect(await pay(target)({ amount: 1 }, { requestId: "order-1" })).toBe(1)
    expect(runs()).toBe(1)
    expect(existsSync(join(base, "app", "ledger.json"))).toBe(false)
  })

  it("links are counted over the whole path: a chain of doubling links is a LedgerConfigError at once", () => {
    const base = dirname(freshPath())
    mkdirSync(base, { recursive: true })
    symlinkSync(".", join(base, "l0"))
    for (let k = 1; k <= 20; k++) symlinkSync(`l${k - 1}/l${k - 1}`, join(base, `l${k}`))
    // A budget per directory made this 2^20 readlinks (minutes in the constructor, past the test's timeout); the
    // kernel says ELOOP.
    expect(() => new FileLedgerStorage(join(base, "l20", "ledger.json"))).toThrow(LedgerConfigError)
  })

  it.skipIf(process.platform === "win32")(
    "a link whose target holds a `\\` or a `c:` names that file, as POSIX reads it: one ledger, one run",
    async () => {
      const base = dirname(freshPath())
      mkdirSync(join(base, "c:data"), { recursive: true })
      const named = join(base, "led\\ger.json") // one file name, as systemd's escapes (\x2d) are
      symlinkSync("led\\ger.json", join(base, "ledger.json"))
      symlinkSync("c:data", join(base, "cur"))
      const { pay, runs } = payments()
      await pay(join(base, "ledger.json"))({ amount: 1 }, { requestId: "order-1" })
      expect(await pay(named)({ amount: 1 }, { requestId: "order-1" })).toBe(1)
      expect(runs()).toBe(1)
      expect(new FileLedgerStorage(join(base, "ledger.json")).path).toBe(named)
      expect(new FileLedgerStorage(join(base, "cur", "l.json")).path).toBe(join(base, "c:data", "l.json"))
    },
  )

  it.skipIf(process.platform === "win32")(
    "a link whose resolved path passes PATH_MAX (lstat: ENAMETOOLONG) is refused or one ledger, never two",
    () => {
      const base = dirname(freshPath())
      const x = "x".repeat(200)
      mkdirSync(join(base, x), { recursive: true })
      symlinkSync(x, join(base, "s0"))
      for (let k = 1; k <= 22; k++) {
        mkdirSync(join(base, `s${k - 1}`, x))
        symlinkSync(`s${k - 1}/${x}`, join(base, `s${k}`))
      }
      // The kernel opens both short names: one file, which the store once knew by two unresolved paths.
      symlinkSync("real.json", join(base, "s22", "ledger.json"))
      writeFileSync(join(base, "s22", "real.json"), "{}")
      const open = (name: string): string | undefined => {
        try {
          return new FileLedgerStorage(join(base, "s22", name)).path
        } catch (e) {
          expect(e).toBeInstanceOf(LedgerConfigError)
          expect(String(e)).toContain(name)
        }
      }
      try {
        const [viaLink, direct] = [open("ledger.json"), open("real.json")]
        expect(
          viaLink === undefined || direct === undefined || viaLink === direct,
          `${viaLink} vs ${direct}`,
        ).toBe(true)
      } finally {
        renameSync(join(base, "s11", x), join(base, "half")) // the tree's real depth again fits rmSync's paths
      }
    },
  )

  it.skipIf(process.platform === "win32")(
    "a rewrite keeps the ledger's permission bits (0600 stays private)",
    async () => {
      const path = freshPath()
      await new FileLedgerStorage(path).set(newEntry({ requestId: "a", tool: "t" }, 1))
      chmodSync(path, 0o600)
      await new FileLedgerStorage(path).set(newEntry({ requestId: "b", tool: "t" }, 1))
      expect(statSync(path).mode & 0o777).toBe(0o600)
    },
  )

  it("writes beside a row holding one string of 5 million escapes (no regex stack overflow)", async () => {
    const esc = "\\u00e9".repeat(5_000_000) // as json.dumps writes a long non-ASCII text
    const path = withFile(
      `{"doc": {"request_id": "doc", "tool": "t", "status": "completed", "result": "${esc}"}}`,
    )
    await new FileLedgerStorage(path).set(newEntry({ requestId: "x", tool: "t" }, 1))
    const again = new FileLedgerStorage(path)
    expect((await again.get("doc"))?.result).toBe("\u00e9".repeat(5_000_000))
    expect((await again.get("x"))?.requestId).toBe("x")
  }, 60_000)
})
