// HttpLedgerStorage declares what the API accepts in a body, so a result the API would refuse (413 too large, 400
// too deep) completes as unstorable instead of failing its completion after the tool ran.
import { describe, expect, it } from "vitest"
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
