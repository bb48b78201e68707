// GET /v1/receipts over each receipt store, with a page budget of 64 KiB (`maxReceiptPageBytes`; the 8 MiB default
// made each store write 21 MB), receipts of 3 KB and one of 72 KiB: a page ends at the budget of receipt lines (a
// receipt larger than that comes alone), its cursor resumes at the first receipt left out, and the route never asks
// a store for a page of receipts it cannot fit (a page of 500 of them was 150 MB in memory). The default budget is
// checked once, on the memory store.
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { tokenAuth } from "../../src/cli/token-auth.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { receiptExportLine } from "../../src/core/receipts/record.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  type ReceiptListOptions,
  type ReceiptStore,
} from "../../src/receipts.ts"
import { tempDirs } from "../temp-dirs.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const TOKEN = "page-bytes-token-0123456789"
const BUDGET = 64 * 2 ** 10
// The default budget's proportions scaled down 128 times: receipts of 300 KB and one of 9 MiB.
const SMALL = 2_400
const BIG = 9 * 2 ** 13
const pool = neonPool(undefined, 2)
const tables: string[] = []
const prefixes: string[] = []
const freshDir = tempDirs("rcpt-page-bytes-")
afterAll(async () => {
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}`)
  await pool.end()
  const redis = upstashClient()
  for (const p of prefixes) {
    const keys = await redis.keys(`${p}*`)
    if (keys.length) await redis.del(...keys)
  }
})

const STORES: Record<string, () => Promise<ReceiptStore>> = {
  memory: async () => new MemoryReceiptStore(),
  file: async () => new FileReceiptStore(join(freshDir(), "receipts.jsonl"), { fsync: false }),
  upstash: async () => {
    await requireUpstash()
    const prefix = `mycelium-test:${runTag("rpage")}:receipts:`
    prefixes.push(prefix)
    return new UpstashReceiptStore({ redis: upstashClient(), prefix })
  },
  neon: async () => {
    await requirePostgres(pool)
    const table = `rpage_${runTag("t").replaceAll("-", "_")}`.toLowerCase()
    tables.push(table)
    const store = new NeonReceiptStore({ pool, table })
    await store.migrate()
    return store
  },
}

/** The store as the route sees it, recording the bytes of each page it hands out. */
function counted(store: ReceiptStore) {
  const reads: number[] = []
  const wrapped: ReceiptStore = {
    append: (r, chain) => store.append(r, chain),
    list: (o) => store.list(o),
    async listPage(o: ReceiptListOptions = {}) {
      const page = await store.listPage(o)
      reads.push(page.receipts.reduce((n, r) => n + receiptExportLine(r).length + 1, 0))
      return page
    },
  }
  return { wrapped, reads }
}

async function filled(kind: string) {
  const { wrapped, reads } = counted(await (STORES[kind] as () => Promise<ReceiptStore>)())
  const emitters = ["agent-a", "agent-b"].map(
    (agentId) => new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: wrapped, agentId }),
  )
  // 40 receipts of about 3 KB, the 21st of 72 KiB: 190 KB in all, of two agents' chains.
  for (let i = 0; i < 40; i++)
    await (emitters[i % 2] as ReceiptEmitter).emit({
      action: "export",
      actionKind: "tool",
      requestId: `r-${i}`,
      status: "completed",
      outputs: { report: `${i}`.padEnd(i === 20 ? BIG : SMALL, "x") },
    })
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: tokenAuth(TOKEN),
    receipts: () => ({ emitter: emitters[0] as ReceiptEmitter, keys: { hmac: "k" } }),
    maxReceiptPageBytes: BUDGET,
  })
  return { app, store: wrapped, reads }
}

type App = Awaited<ReturnType<typeof filled>>["app"]

/** Every page from `query` on, following the JSON cursor or the Link header; each page's size and receipt ids. */
async function pages(app: App, query: string) {
  const out: Array<{ bytes: number; ids: string[] }> = []
  let next: string | null = `/v1/receipts?${query}`
  while (next !== null) {
    const r = await app.request(next, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(r.status).toBe(200)
    const text = await r.text()
    if (query.includes("jsonl")) {
      const lines = text.split("\n").filter((l) => l)
      out.push({ bytes: text.length, ids: lines.map((l) => (JSON.parse(l) as Receipt).receipt_id) })
      const link = r.headers.get("link")
      next = link ? `/v1/receipts${/^<([^>]*)>/.exec(link)?.[1]}` : null
    } else {
      const page = JSON.parse(text) as { receipts: Receipt[]; cursor: string | null }
      out.push({
        bytes: page.receipts.reduce((n, x) => n + receiptExportLine(x).length + 1, 0),
        ids: page.receipts.map((x) => x.receipt_id),
      })
      next = page.cursor === null ? null : `/v1/receipts?${query}&cursor=${page.cursor}`
    }
  }
  return out
}

describe.each(Object.keys(STORES))("GET /v1/receipts over the %s store", (kind) => {
  it("pages of 500 stop at the budget, the receipt over it alone, and together hold every receipt in order", async () => {
    const { app, store, reads } = await filled(kind)
    const all = (await store.list()).map((r) => r.receipt_id)
    const big = all[20]
    for (const format of ["jsonl", "json"]) {
      reads.length = 0
      const got = await pages(app, `format=${format}&limit=500`)
      expect(got.flatMap((p) => p.ids)).toEqual(all)
      for (const p of got) if (p.ids.length > 1) expect(p.bytes).toBeLessThanOrEqual(BUDGET)
      expect(got.filter((p) => p.ids.includes(big as string))).toEqual([
        { bytes: expect.any(Number), ids: [big] },
      ])
      // The 20 receipts before the big one, the big one, the 19 after: three pages, not one of 21 MiB.
      expect(got.map((p) => p.ids.length)).toEqual([20, 1, 19])
      // No store page was larger than the budget plus the one receipt that did not fit.
      expect(Math.max(...reads)).toBeLessThanOrEqual(BUDGET + BIG + 1000)
    }
    const b = (await store.list({ agentId: "agent-b" })).map((r) => r.receipt_id)
    const filtered = await pages(app, "format=jsonl&limit=500&agent_id=agent-b")
    expect(filtered.flatMap((p) => p.ids)).toEqual(b)
    for (const p of filtered) expect(p.bytes).toBeLessThanOrEqual(BUDGET)
  }, 120_000)
})

describe("GET /v1/receipts page budget", () => {
  it("is 8 MiB by default: two receipts of nearly 4 MiB share a page, a third of 3 KB starts the next", async () => {
    const store = new MemoryReceiptStore()
    const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" })
    for (const [i, size] of [4 * 2 ** 20 - 2000, 4 * 2 ** 20 - 2000, 3000].entries())
      await emitter.emit({
        action: "export",
        actionKind: "tool",
        requestId: `r-${i}`,
        status: "completed",
        outputs: { report: "x".repeat(size) },
      })
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: tokenAuth(TOKEN),
      receipts: () => ({ emitter, keys: { hmac: "k" } }),
    })
    const got = await pages(app, "format=jsonl&limit=500")
    expect(got.map((p) => p.ids.length)).toEqual([2, 1])
    expect(got[0]?.bytes).toBeGreaterThan(8 * 2 ** 20 - 4000)
    expect((got[0]?.bytes ?? 0) + (got[1]?.bytes ?? 0)).toBeGreaterThan(8 * 2 ** 20)
  })

  it("refuses a maxReceiptPageBytes that is not a whole number from 1 to 64 MiB when the app is built", () => {
    const build = (maxReceiptPageBytes: unknown) =>
      createLedgerApp({
        storage: new MemoryLedgerStorage(),
        maxReceiptPageBytes: maxReceiptPageBytes as number,
      })
    for (const v of [
      Number.NaN,
      Number(process.env.MYCELIUM_UNSET_FOR_TEST),
      0,
      -1,
      1.5,
      Infinity,
      2 ** 26 + 1,
      "65536",
    ])
      expect(() => build(v), String(v)).toThrow(
        expect.objectContaining({
          name: "InvalidOptionError",
          code: "invalid_option",
          message: expect.stringContaining("maxReceiptPageBytes"),
        }),
      )
    for (const v of [1, 2 ** 26]) expect(() => build(v)).not.toThrow()
  })
})
