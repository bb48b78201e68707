// What a hostile caller learns from the API's answers when the store is damaged, and what its keys can do to a
// call's identity. A damaged ledger file answered 409 with its absolute path and its first bytes; a held lock named
// the lock path. Both are now 503 without detail (the server logs it), on agent, reader and store routes alike.
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, afterEach, describe, expect, it, vi } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const JSON_HEADERS = { "content-type": "application/json" }
const ROUTES = [
  ["POST", "/v1/calls", { tool: "t", meta: { request_id: "r" } }],
  ["GET", "/v1/transitions", undefined],
  ["GET", "/v1/transitions/r", undefined],
  ["GET", "/v1/rows/r", undefined],
] as const

afterEach(() => {
  vi.restoreAllMocks()
})
const dirs: string[] = []
// After every test, so the lock-holding child the test SIGKILLed is gone.
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const privateDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "mycelium-leak-"))
  dirs.push(dir)
  return join(dir, "private-dir")
}

async function answers(app: ReturnType<typeof createLedgerApp>) {
  const out: { path: string; status: number; code: string; text: string }[] = []
  for (const [method, path, body] of ROUTES) {
    const r = await app.request(path, {
      method,
      ...(body ? { headers: JSON_HEADERS, body: JSON.stringify(body) } : {}),
    })
    const text = await r.text()
    out.push({
      path,
      status: r.status,
      code: (JSON.parse(text) as { error: { code: string } }).error.code,
      text,
    })
  }
  return out
}

describe("a damaged store through the API", () => {
  it("a corrupt ledger file is 503 ledger_file_corrupt: no path, no file content in the answer; the log has both, on one line per request", async () => {
    const dir = privateDir()
    mkdirSync(dir)
    const file = join(dir, "ledger.json")
    writeFileSync(file, "x\nAPI_KEY=sk_live_0123456789 is not json")
    const logged: unknown[] = []
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
      logged.push(args)
    })
    const app = createLedgerApp({ storage: new FileLedgerStorage(file) })
    for (const a of await answers(app)) {
      expect([a.path, a.status, a.code]).toEqual([a.path, 503, "ledger_file_corrupt"])
      expect(a.text).not.toContain("private-dir")
      expect(a.text).not.toContain("API_KEY")
    }
    // `mycelium serve` prints this log: one line per request (the file's newline escaped), no stack trace.
    expect(logged).toHaveLength(ROUTES.length)
    for (const args of logged as unknown[][]) {
      expect(args).toHaveLength(1)
      const line = String(args[0])
      expect(line).toContain(file)
      expect(line).toContain("(ledger_file_corrupt)")
      expect(line).toContain("x\\x0aAPI_KEY")
      expect(line).not.toMatch(/[\n\r]/)
    }
  })

  it("a lock another live process holds is 503 ledger_file_lock_timeout without the lock path", async () => {
    const dir = privateDir()
    mkdirSync(dir)
    const file = join(dir, "ledger.json")
    // A real writer process parked while it holds the lock (test/adapters/file-lock-child.ts).
    const child = spawn(
      process.execPath,
      ["--import", "tsx", resolve("test/adapters/file-lock-child.ts"), file],
      {
        env: { ...process.env, MYCELIUM_TEST_LOCK_PARK: "lock-held" },
        stdio: ["ignore", "ignore", "pipe"],
      },
    )
    try {
      let err = ""
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`writer never parked: ${err}`)), 30_000)
        child.stderr.on("data", (d) => {
          err += String(d)
          if (err.includes("PARKED lock-held")) {
            clearTimeout(timer)
            ok()
          }
        })
      })
      vi.spyOn(console, "error").mockImplementation(() => {})
      const app = createLedgerApp({ storage: new FileLedgerStorage(file, { lockTimeout: 0.3 }) })
      const r = await app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify({ tool: "t", meta: { request_id: "r" } }),
      })
      const text = await r.text()
      expect([r.status, (JSON.parse(text) as { error: { code: string } }).error.code]).toEqual([
        503,
        "ledger_file_lock_timeout",
      ])
      expect(text).not.toContain("private-dir")
    } finally {
      child.kill("SIGKILL")
    }
  }, 40_000)
})

describe("keys a JavaScript object cannot hold", () => {
  it("args {'__proto__': …} is refused, not stored as {} under the id of args {}", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    const binding =
      '"binding":{"agent_id":"a","policy_version":"1","side_effect_class":"non_idempotent_mutate"}'
    const begin = (args: string) =>
      app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: `{"tool":"pay","args":${args},${binding}}`,
      })
    const proto = await begin('{"__proto__":{"amount":100}}')
    const refused = (await proto.json()) as { error: { code: string; message: string } }
    expect([proto.status, refused.error.code]).toEqual([400, "invalid_body"])
    // It says what is wrong (not the Unicode message the text check shares the path with).
    expect(refused.error.message).toBe('args: a "__proto__" key cannot be stored; rename it')
    expect(storage.size).toBe(0)
    // The empty call is its own call, not "held" by the refused one.
    const empty = await begin("{}")
    expect(((await empty.json()) as { status: string }).status).toBe("run")
    const nested = await begin('{"amount":{"__proto__":{"x":1}}}')
    expect(nested.status).toBe(400)
  })

  it("held: readers see the lease's hash as owner, never the lease itself", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const run = (await (
      await app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify({ tool: "t", meta: { request_id: "held" } }),
      })
    ).json()) as { lease: string }
    expect(run.lease.length).toBeGreaterThanOrEqual(43)
    for (const path of ["/v1/transitions/held", "/v1/transitions", "/v1/rows/held"]) {
      const text = await (await app.request(path)).text()
      expect(text).toContain('"owner":"lease:')
      expect(text).not.toContain(run.lease)
    }
  })
})
