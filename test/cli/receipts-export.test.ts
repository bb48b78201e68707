// `mycelium receipts export --url`: an auditor downloads a tenant's receipts from a real HTTP server into a file that
// `mycelium receipts verify` accepts offline. The server is treated as untrusted too: a next-page link elsewhere,
// a line that is not a receipt or an error answer leaves no file behind, and the token goes nowhere else.
import { execFile } from "node:child_process"
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseReceiptJson } from "../../src/adapter-kit.ts"
import { serve } from "../../src/cli/http-bridge.ts"
import { tokenAuth } from "../../src/cli/token-auth.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { receiptPayloadText } from "../../src/core/receipts/record.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
} from "../../src/receipts.ts"
import { cliCommand } from "./cli-bin.ts"

const KEY = "export-receipt-key"
const TOKEN = "export-token-0123456789"
const cwd = mkdtempSync(join(tmpdir(), "mycelium-export-"))
const servers: Server[] = []
let api = ""

interface Run {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

// Asynchronous: the API under test answers from this process, so a blocking spawnSync would deadlock it.
const run = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  new Promise((done) => {
    execFile(
      cliCommand()[0],
      [...cliCommand()[1], ...args],
      { cwd, env: { ...process.env, NO_COLOR: "1", MYCELIUM_TOKEN: "", ...env } },
      (error, out, err) => done({ code: error ? ((error.code as number | undefined) ?? 1) : 0, out, err }),
    )
  })

const listen = (server: Server): Promise<string> =>
  new Promise((ready) => {
    servers.push(server)
    server.listen(0, "127.0.0.1", () => ready(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  })

/** A hostile stand-in for the API: answers every request with `answer`, recording what it was sent. */
function fake(
  answer: (req: IncomingMessage) => { status?: number; headers?: Record<string, string>; body: string },
) {
  const seen: IncomingMessage[] = []
  const server = createServer((req, res) => {
    seen.push(req)
    const a = answer(req)
    res.writeHead(a.status ?? 200, a.headers ?? { "content-type": "application/x-ndjson" })
    res.end(a.body)
  })
  return { seen, url: listen(server) }
}

const leftovers = () => readdirSync(cwd).filter((f) => f.includes(".partial"))

beforeAll(async () => {
  const store = new MemoryReceiptStore()
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "agent-a" })
  // One receipt in the original's number forms, then more than one 500-receipt page of this port's own.
  const line =
    '{"receipt_id": "rcpt-00000000000000bb", "agent_id": "agent-a", "action": "pay", "action_kind": "tool", ' +
    '"request_id": "r-py", "inputs": {"args": [], "kwargs": {"amount": 100.0}}, "outputs": {"wei": ' +
    '1152921504606846977, "refund": -0.0}, "status": "completed", "timestamp": 1767225600.0, "signature": "", "error": null}'
  const read = parseReceiptJson(line) as AuditReceiptRecord
  await emitter.append({ ...read, signature: await hmacReceiptSigner(KEY).sign(receiptPayloadText(read)) })
  for (let i = 0; i < 600; i++)
    await emitter.emit({
      action: "send_payment",
      actionKind: "tool",
      requestId: `r-${i}`,
      status: "completed",
    })
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: tokenAuth(TOKEN),
    receipts: () => ({ emitter, keys: { hmac: KEY } }),
  })
  const server = await serve(app.fetch, 0)
  servers.push(server)
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => {
  for (const s of servers) s.close()
  rmSync(cwd, { recursive: true, force: true })
})

describe("mycelium receipts export", () => {
  it("writes every page to a file that receipts verify accepts offline, chain required", async () => {
    const r = await run(["receipts", "export", "--url", api, "-o", "audit.jsonl"], { MYCELIUM_TOKEN: TOKEN })
    expect([r.code, r.err]).toEqual([0, ""])
    expect(r.out).toContain("601 receipts exported to audit.jsonl")
    const text = readFileSync(join(cwd, "audit.jsonl"), "utf8")
    expect(text.trim().split("\n")).toHaveLength(601)
    expect(text).toContain('"kwargs": {"amount": 100.0}')
    expect(statSync(join(cwd, "audit.jsonl")).mode & 0o777).toBe(0o600)
    const v = await run(["receipts", "verify", "audit.jsonl", "--require-chain"], {
      MYCELIUM_SIGNING_KEY: KEY,
    })
    expect([v.code, v.out.trim()]).toEqual([0, "601 receipts verified in audit.jsonl"])
    const wrong = await run(["receipts", "verify", "audit.jsonl"], { MYCELIUM_SIGNING_KEY: "another-key" })
    expect(wrong.code).toBe(1)
    expect(leftovers()).toEqual([])
  })

  it("without -o the lines go to standard output and the count to standard error", async () => {
    const r = await run(["receipts", "export", "--url", `${api}/`, "--agent-id", "agent-a"], {
      MYCELIUM_TOKEN: TOKEN,
    })
    expect([r.code, r.err.trim()]).toEqual([0, "601 receipts exported"])
    expect(r.out.trim().split("\n")).toHaveLength(601)
  })

  it("an unreachable API is exit 1 naming why (the socket's error, not only 'fetch failed')", async () => {
    const closed = await listen(createServer())
    servers.pop()?.close()
    await new Promise((r) => setTimeout(r, 50))
    const r = await run(["receipts", "export", "--url", closed])
    expect([r.code, r.err]).toEqual([1, expect.stringContaining("(ECONNREFUSED)")])
  })

  it("a refused token is exit 1 with the API's error code, and no file", async () => {
    const r = await run(["receipts", "export", "--url", api, "-o", "denied.jsonl"], {
      MYCELIUM_TOKEN: "wrong",
    })
    expect(r.code).toBe(1)
    expect(r.err).toContain("answered 401, unauthorized")
    expect(existsSync(join(cwd, "denied.jsonl"))).toBe(false)
    expect(leftovers()).toEqual([])
  })

  it("a next-page link to another server is not followed: the token stays home and no file is written", async () => {
    const elsewhere = fake(() => ({ body: "" }))
    const otherUrl = await elsewhere.url
    const hostile = fake(() => ({
      headers: {
        "content-type": "application/x-ndjson",
        link: `<${otherUrl}/v1/receipts?cursor=1>; rel="next"`,
      },
      body: "",
    }))
    const r = await run(["receipts", "export", "--url", await hostile.url, "-o", "x.jsonl"], {
      MYCELIUM_TOKEN: TOKEN,
    })
    expect(r.code).toBe(1)
    expect(r.err).toContain("refusing to follow it")
    expect(elsewhere.seen).toHaveLength(0)
    expect(hostile.seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(existsSync(join(cwd, "x.jsonl"))).toBe(false)
  })

  it("a server that loops its pages, or sends what is not a receipt, fails without a file", async () => {
    const looping = fake(() => ({
      headers: { "content-type": "application/x-ndjson", link: '<?format=jsonl&limit=500>; rel="next"' },
      body: "",
    }))
    const loop = await run(["receipts", "export", "--url", await looping.url, "-o", "loop.jsonl"])
    expect([loop.code, loop.err]).toEqual([
      1,
      expect.stringContaining("changes more than a forward position"),
    ])
    // A link may move the position forward only: not back, not in place, and never drop or change a filter.
    for (const link of [
      "<?format=jsonl&limit=500&cursor=5>; rel=next",
      "<?format=jsonl&limit=500&agent_id=agent-a&cursor=5>; rel=next",
      "<?format=jsonl&limit=500&agent_id=agent-b&cursor=5&cursor=6>; rel=next",
      "<?format=jsonl&limit=500&agent_id=agent-b&cursor=05>; rel=next",
    ]) {
      const swapping = fake((req) => ({
        headers: {
          "content-type": "application/x-ndjson",
          ...(req.url?.includes("cursor") ? {} : { link }),
        },
        body: "",
      }))
      const r = await run(["receipts", "export", "--url", await swapping.url, "--agent-id", "agent-b"])
      expect([link, r.code, r.err]).toEqual([link, 1, expect.stringContaining("forward position")])
    }
    // Filtered, so its empty pages are windows without a match (unfiltered, an empty page is the last).
    const backwards = fake((req) => ({
      headers: {
        "content-type": "application/x-ndjson",
        link: req.url?.includes("cursor=9")
          ? '<?format=jsonl&limit=500&agent_id=agent-b&cursor=3>; rel="next"'
          : '<?format=jsonl&limit=500&agent_id=agent-b&cursor=9>; rel="next"',
      },
      body: "",
    }))
    const back = await run(["receipts", "export", "--url", await backwards.url, "--agent-id", "agent-b"])
    expect([back.code, back.err]).toEqual([1, expect.stringContaining("forward position")])
    const junk = fake(() => ({ body: '{"receipt_id": "rcpt-1", "approved_by": "me"}\n' }))
    const bad = await run(["receipts", "export", "--url", await junk.url, "-o", "junk.jsonl"])
    expect([bad.code, bad.err]).toEqual([1, expect.stringContaining("receipt 1 from")])
    const html = fake(() => ({ headers: { "content-type": "text/html" }, body: "<html></html>" }))
    const page = await run(["receipts", "export", "--url", await html.url])
    expect([page.code, page.err]).toEqual([1, expect.stringContaining("did not answer a receipt export")])
    expect([existsSync(join(cwd, "loop.jsonl")), existsSync(join(cwd, "junk.jsonl")), leftovers()]).toEqual([
      false,
      false,
      [],
    ])
  })

  // The download was renamed over whatever was at -o: an earlier export, the live store's own receipts.jsonl (its
  // only copy) or a symlink, with no --force asked for. A file created there during the download (another export)
  // was replaced too: the finished file is linked into place, which fails on a taken name.
  it("-o never replaces a file or a symlink there, nor one created during the download; --force does", async () => {
    const KEPT = '{"receipt_id":"rcpt-earlier","note":"the only copy"}\n'
    const empty = await fake(() => ({ body: "" })).url
    writeFileSync(join(cwd, "earlier.jsonl"), KEPT)
    const file = await run(["receipts", "export", "--url", empty, "-o", "earlier.jsonl"])
    expect([file.code, file.err]).toEqual([
      1,
      expect.stringContaining("earlier.jsonl already exists (use --force"),
    ])
    expect(readFileSync(join(cwd, "earlier.jsonl"), "utf8")).toBe(KEPT)

    symlinkSync(join(cwd, "earlier.jsonl"), join(cwd, "link.jsonl"))
    symlinkSync(join(cwd, "nowhere.jsonl"), join(cwd, "dangling.jsonl"))
    for (const name of ["link.jsonl", "dangling.jsonl"]) {
      const link = await run(["receipts", "export", "--url", empty, "-o", name])
      expect([link.code, link.err]).toEqual([1, expect.stringContaining(`${name} already exists`)])
      expect(lstatSync(join(cwd, name)).isSymbolicLink()).toBe(true)
    }
    expect(readFileSync(join(cwd, "earlier.jsonl"), "utf8")).toBe(KEPT)
    expect(existsSync(join(cwd, "nowhere.jsonl"))).toBe(false)

    const racer = await fake(() => {
      writeFileSync(join(cwd, "raced.jsonl"), KEPT)
      return { body: "" }
    }).url
    const raced = await run(["receipts", "export", "--url", racer, "-o", "raced.jsonl"])
    expect([raced.code, raced.err]).toEqual([1, expect.stringContaining("raced.jsonl already exists")])
    expect(readFileSync(join(cwd, "raced.jsonl"), "utf8")).toBe(KEPT)

    const forced = await run(["receipts", "export", "--url", empty, "-o", "link.jsonl", "--force"])
    expect([forced.code, forced.err]).toEqual([0, ""])
    // The link itself replaced, never written through.
    expect(lstatSync(join(cwd, "link.jsonl")).isFile()).toBe(true)
    expect(readFileSync(join(cwd, "link.jsonl"), "utf8")).toBe("")
    expect(readFileSync(join(cwd, "earlier.jsonl"), "utf8")).toBe(KEPT)
    expect(leftovers()).toEqual([])
  })

  it("usage errors are exit 2: no --url, a token over plain http to another host, a URL with a query", async () => {
    for (const [args, env, text] of [
      [["receipts", "export"], {}, "needs --url"],
      [["receipts", "export", "--url", "http://ledger.example.com"], { MYCELIUM_TOKEN: TOKEN }, "use https"],
      [["receipts", "export", "--url", `${api}?agent_id=x`], {}, "base URL alone"],
      [["receipts", "export", "--url", "ftp://x"], {}, "http(s)"],
      [
        ["receipts", "export", "--url", api, "--token-env", "NOT_SET_ANYWHERE"],
        {},
        "NOT_SET_ANYWHERE is not set",
      ],
      [["receipts", "export", "--url", api, "file.jsonl"], {}, "pass -o FILE"],
    ] as const) {
      const r = await run([...args], env)
      expect([args.join(" "), r.code, r.err]).toEqual([args.join(" "), 2, expect.stringContaining(text)])
    }
  })
})
