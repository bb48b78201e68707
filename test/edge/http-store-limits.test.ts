// HttpLedgerStorage declares what the API accepts in a body, so a result the API would refuse (413 too large, 400
// too deep) completes as unstorable instead of failing its completion after the tool ran.
import { describe, expect, it } from "vitest"
import { entryToRow, newEntry } from "../../src/adapter-kit.ts"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import {
  ActionLedger,
  InvalidOptionError,
  LedgerConfigError,
  LedgerResultUnstorableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

function over(limits?: { maxBodyBytes: number; maxDepth: number }) {
  const rows = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage: rows, ...(limits ? { limits } : {}) })
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch
  return { rows, fetch }
}

const BINDING = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } as const

describe("HttpLedgerStorage limits", () => {
  it("defaults to the API's default body limits, less the wrapper", () => {
    expect(new HttpLedgerStorage({ url: "http://x" }).limits).toEqual({
      validUnicodeOnly: true,
      maxRowBytes: 1024 * 1024 - 4096,
      maxDepth: 127,
    })
    expect(
      new HttpLedgerStorage({ url: "http://x", serverLimits: { maxBodyBytes: 65536, maxDepth: 16 } }).limits,
    ).toMatchObject({ maxRowBytes: 61440, maxDepth: 15 })
  })

  it("refuses serverLimits that are not whole numbers above the wrapper", () => {
    for (const serverLimits of [
      { maxBodyBytes: 100 },
      { maxDepth: 1 },
      { maxDepth: Number.NaN },
      { maxBodyBytes: 1.5e6 + 0.5 },
    ])
      expect(() => new HttpLedgerStorage({ url: "http://x", serverLimits })).toThrow(InvalidOptionError)
  })

  for (const [label, result] of [
    ["1.1 MB", "x".repeat(1_100_000)],
    ["130 levels deep", Array.from({ length: 129 }).reduce<unknown>((v) => [v], "leaf")],
  ] as const) {
    it(`a result of ${label} completes as unstorable over the API's defaults; the tool ran once`, async () => {
      const { rows, fetch } = over()
      const ledger = new ActionLedger({
        storage: new HttpLedgerStorage({ url: "http://l", fetch }),
        onWarning: () => {},
      })
      let runs = 0
      const big = ledger.tool({ name: "big", binding: BINDING }, async () => {
        runs++
        return result
      })
      expect(await big({ n: 1 }, { requestId: "big-1" })).toBe(result)
      expect((await rows.get("big-1"))?.terminalOutcome).toBe("COMPLETED")
      await expect(big({ n: 1 }, { requestId: "big-1" })).rejects.toBeInstanceOf(LedgerResultUnstorableError)
      expect(runs).toBe(1)
    })
  }

  it("a server with larger limits takes the result whole when serverLimits says so", async () => {
    const { fetch } = over({ maxBodyBytes: 4 * 1024 * 1024, maxDepth: 128 })
    const storage = new HttpLedgerStorage({
      url: "http://l",
      fetch,
      serverLimits: { maxBodyBytes: 4 * 1024 * 1024 },
    })
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const big = ledger.tool({ name: "big", binding: BINDING }, async () => {
      runs++
      return "x".repeat(1_100_000)
    })
    await big({ n: 1 }, { requestId: "big-2" })
    expect((await big({ n: 1 }, { requestId: "big-2" })).length).toBe(1_100_000)
    expect(runs).toBe(1)
  })

  it("arguments leaving no room under the body limit for a failure's text are refused before the claim", async () => {
    const { rows, fetch } = over()
    const ledger = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://l", fetch }),
      onWarning: () => {},
    })
    let runs = 0
    const upload = ledger.tool({ name: "upload", binding: BINDING }, async () => {
      runs++
      throw new Error(`provider said: ${"e".repeat(5000)}`)
    })
    await expect(
      upload({ blob: "x".repeat(1024 * 1024 - 12_000) }, { requestId: "up" }),
    ).rejects.toBeInstanceOf(LedgerConfigError)
    expect(runs).toBe(0)
    expect(await rows.get("up")).toBeNull()
    await expect(upload({ blob: "x".repeat(900_000) }, { requestId: "up2" })).rejects.toThrow("provider said")
    expect((await rows.get("up2"))?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(runs).toBe(1)
  })
})

describe("HttpLedgerStorage list", () => {
  it("lists every row from an API whose maxPageSize is under 500, page by page", async () => {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows, maxPageSize: 40 })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const ledger = new ActionLedger({ storage: rows, onWarning: () => {} })
    const echo = ledger.tool({ name: "echo", binding: BINDING }, async ({ n }: { n: number }) => n)
    for (let n = 0; n < 95; n++) await echo({ n }, { toolCallId: `c${String(n).padStart(3, "0")}` })
    const store = new HttpLedgerStorage({ url: "http://l", fetch })
    const ids: string[] = []
    for await (const row of store.list()) ids.push(row.requestId)
    expect(ids).toHaveLength(95)
    expect(new Set(ids).size).toBe(95)
    const some: string[] = []
    for await (const row of store.list({ limit: 30 })) some.push(row.requestId)
    expect(some).toEqual(ids.slice(0, 30))
  })
})

describe("HttpLedgerStorage list with a limit", () => {
  async function backend(maxPageSize: number, n: number) {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows, maxPageSize })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const ledger = new ActionLedger({ storage: rows, onWarning: () => {} })
    const echo = ledger.tool({ name: "echo", binding: BINDING }, async ({ n }: { n: number }) => n)
    for (let i = 0; i < n; i++) await echo({ n: i }, { toolCallId: `c${String(i).padStart(3, "0")}` })
    return fetch
  }

  it("an API over HttpLedgerStorage lists its transitions from a store API whose maxPageSize is under 500", async () => {
    const fetch = await backend(40, 95)
    // The operator route scans `limit * 20` rows: a finite limit of 2,000, sent as 500 a page.
    const front = createLedgerApp({ storage: new HttpLedgerStorage({ url: "http://l", fetch }) })
    const res = await front.request("/v1/transitions")
    expect(res.status).toBe(200)
    const body = (await res.json()) as { transitions: unknown[]; cursor: string | null }
    expect(body.transitions).toHaveLength(95)
    expect(body.cursor).toBeNull()
    const some: string[] = []
    const store = new HttpLedgerStorage({ url: "http://l", fetch })
    for await (const row of store.list({ limit: 70 })) some.push(row.requestId)
    expect(some).toHaveLength(70)
  })

  it("yields no more rows than the limit when the server answers a bigger page than asked", async () => {
    const real = await backend(500, 95)
    let asked = 0
    // An older or hostile server that ignores `limit` and answers its own page of 100.
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
      asked++
      const url = new URL(String(input))
      url.searchParams.delete("limit")
      return real(url, init)
    }) as typeof globalThis.fetch
    const store = new HttpLedgerStorage({ url: "http://l", fetch })
    const got: string[] = []
    for await (const row of store.list({ limit: 3 })) got.push(row.requestId)
    expect(got).toHaveLength(3)
    expect(asked).toBe(1)
  })
})

describe("list pages end at maxRowPageBytes", () => {
  // 70 rows of 1 MB (each accepted by PUT) made one 70 MB page, over the 64 MiB HttpLedgerStorage reads: every
  // listing, and the ledger's listTransitions() over it, failed for good.
  async function rowsOf(bytes: number, n: number, maxRowPageBytes?: number) {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows, ...(maxRowPageBytes ? { maxRowPageBytes } : {}) })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const big = "x".repeat(bytes)
    for (let i = 0; i < n; i++) {
      const e = newEntry({ requestId: `r${String(i).padStart(3, "0")}`, tool: "t" }, 1)
      await rows.set({ ...e, terminalOutcome: "COMPLETED", status: "completed", result: big })
    }
    const page = async (path: string) => (await (await app.request(path)).json()) as Record<string, unknown>
    return { app, fetch, page }
  }

  it("a page stops at the byte budget with a cursor, a larger row comes alone, and every listing completes", async () => {
    const { fetch, page } = await rowsOf(20_000, 10, 50_000)
    const first = await page("/v1/rows")
    expect((first.rows as unknown[]).length).toBe(2)
    expect(first.cursor).toBe("r001")
    // The client reads no more than two rows' worth of answer: it follows the cursor of each short page.
    const store = new HttpLedgerStorage({ url: "http://l", fetch, maxResponseBytes: 60_000 })
    const ids: string[] = []
    for await (const row of store.list()) ids.push(row.requestId)
    expect(ids).toHaveLength(10)
    const ledger = new ActionLedger({ storage: store, onWarning: () => {} })
    expect(await ledger.listTransitions()).toHaveLength(10)

    const alone = await rowsOf(20_000, 3, 1_000)
    const one = await alone.page("/v1/rows")
    expect(one).toMatchObject({ cursor: "r000" })
    expect((one.rows as unknown[]).length).toBe(1)
  })

  it("GET /v1/transitions too: its cursor resumes at the first row left out", async () => {
    const { page } = await rowsOf(20_000, 10, 50_000)
    const seen: string[] = []
    let cursor: unknown = null
    do {
      const body = await page(`/v1/transitions${cursor ? `?cursor=${cursor}` : ""}`)
      const rows = body.transitions as { request_id: string }[]
      expect(rows.length).toBeLessThanOrEqual(2)
      seen.push(...rows.map((r) => r.request_id))
      cursor = body.cursor
    } while (cursor)
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => `r00${i}`))
  })

  it("defaults to 8 MiB: rows of 1 MB list under a 9 MiB answer cap", async () => {
    const { fetch, page } = await rowsOf(1_000_000, 10)
    expect(((await page("/v1/rows")).rows as unknown[]).length).toBe(8)
    const store = new HttpLedgerStorage({ url: "http://l", fetch, maxResponseBytes: 9 * 1024 * 1024 })
    let n = 0
    for await (const _ of store.list()) n++
    expect(n).toBe(10)
  })

  it("refuses a maxRowPageBytes that is not a whole number from 1 to 64 MiB when the app is built", () => {
    for (const maxRowPageBytes of [0, -1, 1.5, Number.NaN, 64 * 1024 * 1024 + 1])
      expect(() => createLedgerApp({ storage: new MemoryLedgerStorage(), maxRowPageBytes })).toThrow(
        InvalidOptionError,
      )
  })
})

describe("store routes refuse fences and times no later write can match", () => {
  const req = async (
    app: ReturnType<typeof createLedgerApp>,
    method: string,
    path: string,
    body: unknown,
  ) => {
    const r = await app.request(path, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    return { status: r.status, json: (await r.json()) as { error?: { code: string } } }
  }
  const row = (fields: Record<string, unknown>) => ({
    ...entryToRow({
      ...newEntry({ requestId: "w", tool: "t" }, 1),
      terminalOutcome: "FAILED_BEFORE_EFFECT",
      status: "failed",
    }),
    ...fields,
  })

  it("a fence of 'Infinity', 2^53, -1 or 1.5: 400 invalid_body, nothing written", async () => {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows })
    const bad = [{ fence: "Infinity" }, { fence: 2 ** 53 }, { fence: -1 }, { fence: 1.5 }, { fence: null }]
    for (const fields of bad) {
      const put = await req(app, "PUT", "/v1/rows/w", { row: row(fields) })
      expect([fields, put.status, put.json.error?.code]).toEqual([fields, 400, "invalid_body"])
      const next = await req(app, "POST", "/v1/rows/w/transition", {
        next: row(fields),
        expect: { outcomes: ["IN_FLIGHT"], fence: 0 },
      })
      expect([fields, next.status]).toEqual([fields, 400])
      const claim = await req(app, "POST", "/v1/rows/w/claim", { entry: row(fields), lease_ttl: 60 })
      expect([fields, claim.status]).toEqual([fields, 400])
    }
    expect(await rows.get("w")).toBeNull()
    // The original's legacy rows (no fence, no times) are still rows.
    const legacy = row({ fence: 2 ** 53 - 1, lease_until: null })
    delete (legacy as Record<string, unknown>).started_at
    expect((await req(app, "PUT", "/v1/rows/w", { row: legacy })).status).toBe(200)
    const { fence: _, ...fenceless } = row({})
    expect((await req(app, "PUT", "/v1/rows/w2", { row: { ...fenceless, request_id: "w2" } })).status).toBe(
      200,
    )
  })
})

describe("a damaged row (terminal_outcome or side_effect_boundary null) is repaired over HTTP", () => {
  // The repair expects the stored value ({outcomes: [null]}), which the transition route refused with a 400: the
  // ledger read it as an outage on every call of that row.
  for (const damage of [{ terminal_outcome: null }, { side_effect_boundary: null }])
    it(JSON.stringify(damage), async () => {
      const { rows, fetch } = over()
      const legacy = {
        ...entryToRow({ ...newEntry({ requestId: "legacy", tool: "pay" }, 1), status: "completed" }),
        terminal_outcome: "COMPLETED",
        result: "stored",
        ...damage,
      }
      const app = createLedgerApp({ storage: rows })
      const put = await app.request("/v1/rows/legacy", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ row: legacy }),
      })
      expect(put.status).toBe(200)
      const ledger = new ActionLedger({
        storage: new HttpLedgerStorage({ url: "http://l", fetch }),
        onWarning: () => {},
      })
      let runs = 0
      const pay = ledger.tool({ name: "pay", binding: BINDING }, async () => ++runs)
      expect(await pay({}, { requestId: "legacy" })).toBe("stored")
      expect(runs).toBe(0)
      expect((await rows.get("legacy"))?.terminalOutcome).toBe("COMPLETED")
    })
})

describe("GET /v1/dispatch/{id} with more rows than a page", () => {
  it("is refused, not cut (the drift check must see every sibling): 409; a claim still carries them all", async () => {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows, defaultPageSize: 2, maxPageSize: 2 })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const now = Date.now() / 1000
    for (let i = 0; i < 3; i++)
      await rows.set({
        ...newEntry({ requestId: `memo-${i}`, tool: "memo", owner: "w" }, now),
        kwargs: { tool_call_id: "call_9" },
      })
    const r = await fetch("http://l/v1/dispatch/call_9")
    expect(r.status).toBe(409)
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("dispatch_rows_over_budget")
    const storage = new HttpLedgerStorage({ url: "http://l", fetch })
    await expect(storage.findByDispatchId("call_9")).rejects.toMatchObject({
      code: "dispatch_rows_over_budget",
    })
    // A claim still carries every sibling: the call runs once, and its drifted re-send is refused.
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const pay = ledger.tool({ name: "pay", binding: BINDING }, async () => ++runs)
    expect(await pay({ amount: 1 }, { toolCallId: "call_9" })).toBe(1)
    await expect(pay({ amount: 2 }, { toolCallId: "call_9" })).rejects.toThrow()
    expect(runs).toBe(1)
    // Two rows fit: the list is answered whole.
    await rows.set({
      ...newEntry({ requestId: "one", tool: "memo", owner: "w" }, now),
      kwargs: { tool_call_id: "c1" },
    })
    const ok = await fetch("http://l/v1/dispatch/c1")
    expect(ok.status).toBe(200)
  })
})
