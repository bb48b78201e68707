// `mycelium receipts export` against servers that never let it finish: endless pages (empty or full), oversized pages,
// no answer, a body trickled a byte at a time. Each must stop the CLI (exit 1) in bounded time and requests, with no
// file left behind; a sparse filtered export from the real API (empty pages that point on) must still complete.
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { run as receiptsCommand } from "../../src/cli/commands/receipts.ts"
import { UsageError } from "../../src/cli/errors.ts"
import { serve } from "../../src/cli/http-bridge.ts"
import { exportReceipts } from "../../src/cli/receipts-export.ts"
import { tokenAuth } from "../../src/cli/token-auth.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { receiptExportLine } from "../../src/core/receipts/record.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../src/receipts.ts"
import { cliCommand } from "./cli-bin.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-export-limits-"))
const servers: Server[] = []
let LINE = ""

interface Run {
  /** The exit code, or "killed" when the CLI was still running at the deadline. */
  readonly code: number | "killed"
  readonly out: string
  readonly err: string
  readonly ms: number
}

// Asynchronous (the servers answer from this process), and killed at a deadline: on code that never stops, the test
// fails on its assertions instead of hanging the suite.
const run = (args: string[], deadlineMs = 15_000): Promise<Run> =>
  new Promise((done) => {
    const start = Date.now()
    execFile(
      cliCommand()[0],
      [...cliCommand()[1], "receipts", "export", ...args],
      {
        cwd,
        env: { ...process.env, NO_COLOR: "1", MYCELIUM_TOKEN: "" },
        timeout: deadlineMs,
        killSignal: "SIGKILL",
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, out, err) =>
        done({
          code: error ? (error.killed ? "killed" : Number(error.code ?? 1)) : 0,
          out,
          err,
          ms: Date.now() - start,
        }),
    )
  })

/** A hostile API on loopback: `handle` answers each request; `seen` counts them. */
async function hostile(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: string[] = []
  const server = createServer((req, res) => {
    seen.push(req.url ?? "")
    handle(req, res)
  })
  servers.push(server)
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready))
  return { seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

/** Every request gets `lines` and a next link one position further on (`query` kept, as a real API does). */
function pages(lines: (n: number) => string[], query = "format=jsonl&limit=500") {
  return hostile((req, res) => {
    const n = Number(new URL(req.url ?? "/", "http://x").searchParams.get("cursor") ?? "0")
    res.writeHead(200, {
      "content-type": "application/x-ndjson",
      link: `<?${query}&cursor=${n + 1}>; rel="next"`,
    })
    res.end(
      lines(n)
        .map((l) => `${l}\n`)
        .join(""),
    )
  })
}

const files = () => readdirSync(cwd).sort()

beforeAll(async () => {
  const store = new MemoryReceiptStore()
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" })
  await emitter.emit({ action: "pay", actionKind: "tool", requestId: "r-1", status: "completed" })
  LINE = receiptExportLine((await store.list())[0] as Parameters<typeof receiptExportLine>[0])
})

afterAll(() => {
  for (const s of servers) {
    s.closeAllConnections()
    s.close()
  }
  rmSync(cwd, { recursive: true, force: true })
})

describe("receipts export: endless or oversized pages", () => {
  it("an unfiltered empty page that still points on stops at the first page, exit 1, no file", async () => {
    const api = await pages(() => [])
    const r = await run(["--url", api.url, "-o", "empty.jsonl"])
    expect([r.code, r.err]).toEqual([1, expect.stringContaining("empty page that points to another")])
    expect(api.seen).toHaveLength(1)
    expect(files()).toEqual([])
  }, 30_000)

  it("a filtered export follows empty pages, but not more than 10,000 of them", async () => {
    const api = await pages(() => [], "format=jsonl&limit=500&agent_id=agent-b")
    const r = await run(["--url", api.url, "--agent-id", "agent-b", "-o", "sparse.jsonl"], 60_000)
    expect([r.code, r.err]).toEqual([1, expect.stringContaining("over 10000 empty pages")])
    expect(api.seen).toHaveLength(10_001)
    expect(files()).toEqual([])
  }, 90_000)

  it("endless full pages stop past --max-receipts: nothing of the page over it is written, and no file", async () => {
    const api = await pages(() => [LINE, LINE])
    const r = await run(["--url", api.url, "--max-receipts", "5", "-o", "endless.jsonl"])
    expect([r.code, r.err]).toEqual([
      1,
      expect.stringContaining("more than 5 receipts to export (--max-receipts)"),
    ])
    // 2 + 2 fit; the third page would make 6.
    expect(api.seen).toHaveLength(3)
    expect(files()).toEqual([])
    const stdout = await pages(() => [LINE, LINE])
    const s = await run(["--url", stdout.url, "--max-receipts", "5"])
    expect([s.code, s.out.trim().split("\n")]).toEqual([1, [LINE, LINE, LINE, LINE]])
  }, 30_000)

  it("exactly --max-receipts receipts export (the cap is not one short)", async () => {
    const api = await hostile((req, res) => {
      const last = req.url?.includes("cursor=")
      res.writeHead(200, {
        "content-type": "application/x-ndjson",
        ...(last ? {} : { link: '<?format=jsonl&limit=500&cursor=1>; rel="next"' }),
      })
      res.end(`${LINE}\n${LINE}\n`)
    })
    const r = await run(["--url", api.url, "--max-receipts", "4", "--timeout", "0.5", "-o", "four.jsonl"])
    expect([r.code, r.out]).toEqual([0, expect.stringContaining("4 receipts exported to four.jsonl")])
    expect(readFileSync(join(cwd, "four.jsonl"), "utf8").trim().split("\n")).toHaveLength(4)
    rmSync(join(cwd, "four.jsonl"))
  }, 30_000)

  it("a full page whose next link repeats its own cursor stops at once, not at --max-receipts", async () => {
    // Not empty, so the empty-page bound never applies: only the cursor check stops 1,000,000 requests.
    const api = await hostile((_req, res) => {
      res.writeHead(200, {
        "content-type": "application/x-ndjson",
        link: '<?format=jsonl&limit=500&cursor=7>; rel="next"',
      })
      res.end(`${LINE}\n`)
    })
    const r = await run(["--url", api.url, "-o", "in-place.jsonl"])
    expect([r.code, r.err]).toEqual([1, expect.stringContaining("changes more than a forward position")])
    expect(api.seen).toHaveLength(2)
    expect(files()).toEqual([])
  }, 30_000)

  it("a page with more lines than the limit asked for is refused, exit 1, no file", async () => {
    const api = await hostile((_req, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" })
      res.end(`${Array(501).fill(LINE).join("\n")}\n`)
    })
    const r = await run(["--url", api.url, "-o", "big.jsonl"])
    expect([r.code, r.err]).toEqual([
      1,
      expect.stringContaining("holds 501 lines, more than the 500 it was asked for"),
    ])
    expect(api.seen).toHaveLength(1)
    expect(files()).toEqual([])
  }, 30_000)
})

describe("receipts export: a server that never finishes answering", () => {
  it("no headers at all: --timeout 1 stops it in seconds, exit 1, naming the URL and the seconds", async () => {
    const api = await hostile(() => {})
    const r = await run(["--url", api.url, "--timeout", "1", "-o", "silent.jsonl"], 10_000)
    expect([r.code, r.err]).toEqual([
      1,
      expect.stringContaining(`${api.url}/v1/receipts?format=jsonl&limit=500 did not answer within 1 s`),
    ])
    expect(r.ms).toBeLessThan(6000)
    expect(api.seen).toHaveLength(1)
    expect(files()).toEqual([])
  }, 30_000)

  it("headers, then a body trickled a byte every 200 ms: the timeout covers the body read too", async () => {
    const api = await hostile((_req, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" })
      const drip = setInterval(() => res.write(" "), 200)
      res.on("close", () => clearInterval(drip))
    })
    const r = await run(["--url", api.url, "--timeout", "1", "-o", "trickle.jsonl"], 10_000)
    expect([r.code, r.err]).toEqual([1, expect.stringContaining("did not answer within 1 s (--timeout)")])
    expect(r.ms).toBeGreaterThanOrEqual(1000)
    expect(r.ms).toBeLessThan(6000)
    expect(files()).toEqual([])
  }, 30_000)

  it("bad --max-receipts and --timeout values are usage errors (exit 2), before any request", async () => {
    const api = await pages(() => [])
    const bad = [
      ["--max-receipts", "0"],
      ["--max-receipts", "-1"],
      ["--max-receipts", "1.5"],
      ["--max-receipts", "1e3"],
      ["--max-receipts", "abc"],
      ["--timeout", "0"],
      ["--timeout", "-1"],
      ["--timeout", "abc"],
      ["--timeout", "Infinity"],
      ["--timeout", "0x10"],
      ["--timeout", "86401"],
    ]
    for (const [flag, value] of bad) {
      const e = await receiptsCommand(["export", "--url", api.url, `${flag}=${value}`]).catch(
        (x: unknown) => x,
      )
      expect([flag, value, e instanceof UsageError && e.exitCode, String(e)]).toEqual([
        flag,
        value,
        2,
        expect.stringContaining(`${flag} ${value}: use`),
      ])
    }
    // Empty, each is refused before its own check reads it, as every value flag's is.
    for (const flag of ["--max-receipts", "--timeout"])
      await expect(receiptsCommand(["export", "--url", api.url, `${flag}=`])).rejects.toThrow(
        `receipts export: ${flag} is empty`,
      )
    // And through the real command line: exit code 2.
    const r = await run(["--url", api.url, "--max-receipts", "0"])
    expect([r.code, r.err]).toEqual([2, expect.stringContaining("--max-receipts 0: use a whole number")])
    expect(api.seen).toHaveLength(0)
  }, 30_000)
})

describe("receipts export from the real API", () => {
  it("a filtered export across a scan window with no match (an empty page that points on) completes", async () => {
    const store = new MemoryReceiptStore()
    const a = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" })
    const b = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-b" })
    // The API scans 500 x 20 receipts for a filtered page: the first page has none of agent-b's.
    for (let i = 0; i < 10_050; i++)
      await a.emit({ action: "pay", actionKind: "tool", requestId: `a-${i}`, status: "completed" })
    await b.emit({ action: "pay", actionKind: "tool", requestId: "b-1", status: "completed" })
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: tokenAuth("token-0123456789"),
      receipts: () => ({ emitter: a, keys: { hmac: "k" } }),
    })
    let requests = 0
    const server = await serve((req: Request) => {
      requests++
      return app.fetch(req)
    }, 0)
    servers.push(server)
    const pagesSeen: number[] = []
    const n = await exportReceipts({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      token: "token-0123456789",
      agentId: "agent-b",
      write: (t) => pagesSeen.push(t.trim().split("\n").length),
    })
    // Two requests: the empty first window, then the page with agent-b's receipt.
    expect([n, pagesSeen, requests]).toEqual([1, [1], 2])
  }, 60_000)
})
