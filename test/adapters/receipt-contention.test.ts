// Many appends racing on one receipt chain (the real local Redis via Upstash REST, and Postgres via the neon driver):
// appends of one store instance queue per chain, so none is lost to contention; writers elsewhere that keep moving the
// chain past the retry bound are a contention error a caller may retry, never "the store is corrupt".
import { afterAll, describe, expect, it } from "vitest"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { type UpstashReceiptClient, UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import {
  hmacReceiptSigner,
  ReceiptEmitter,
  type ReceiptStore,
  ReceiptStoreContendedError,
  ReceiptStoreCorruptError,
  verifyReceipts,
} from "../../src/receipts.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const pool = neonPool(undefined, 8)
const tables: string[] = []
afterAll(async () => {
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}`)
  await pool.end()
})

const stores: Record<"upstash" | "neon", () => Promise<ReceiptStore>> = {
  upstash: async () => {
    await requireUpstash()
    return new UpstashReceiptStore({ redis: upstashClient(), prefix: `mycelium-test:${runTag("rcont")}:` })
  },
  neon: async () => {
    await requirePostgres(pool)
    const table = `rcont_${runTag("t").replaceAll("-", "_")}`.toLowerCase()
    tables.push(table)
    const s = new NeonReceiptStore({ pool, table })
    await s.migrate()
    return s
  },
}

describe("one process, one receipt store, 60 tasks finishing at once on one chain", () => {
  for (const [backend, open] of Object.entries(stores)) {
    it(`${backend}: every receipt is stored, every row's receipt_ref is in the store, the chain verifies`, async () => {
      const store = await open()
      const receipts = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "nightly" })
      const tasks = new TaskLedger({ receipts, onWarning: () => {} })
      const job = tasks.task("import", async (a: { n: number }) => ({ imported: a.n }))
      const res = await Promise.allSettled(
        Array.from({ length: 60 }, (_, n) => job({ n }, { taskId: `B-${n}` })),
      )
      expect(res.filter((r) => r.status === "rejected")).toEqual([])
      const listed = new Set((await store.list()).map((r) => r.receipt_id))
      expect(listed.size).toBe(60)
      for (const t of await tasks.list()) expect(listed.has(t.lease?.receipt_ref ?? "")).toBe(true)
      expect(await verifyReceipts(await store.list(), { hmac: "k" }, { requireChain: true })).toMatchObject({
        ok: true,
      })
    }, 60_000)
  }
})

describe("other writers that move the chain under every attempt", () => {
  const emitterOn = (store: ReceiptStore) =>
    new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "a", chain: "c" })
  const expectContended = async (store: ReceiptStore) => {
    const err = await emitterOn(store)
      .emit({ action: "t", actionKind: "task", requestId: "r", status: "completed" })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ReceiptStoreContendedError)
    expect(err).not.toBeInstanceOf(ReceiptStoreCorruptError)
    expect((err as ReceiptStoreContendedError).code).toBe("receipt_store_contended")
    expect((err as Error).message).toContain("retry")
  }

  it("upstash: ReceiptStoreContendedError (receipt_store_contended), not ReceiptStoreCorruptError", async () => {
    const redis: UpstashReceiptClient = {
      createScript: () => ({ exec: async () => "moved" }),
      get: async () => JSON.stringify({ seq: 3, digest: "d" }),
      lrange: async () => [],
    }
    await expectContended(new UpstashReceiptStore({ redis }))
  })

  it("neon: the same error", async () => {
    const query = async (text: string) => ({
      rows: text.startsWith("SELECT") ? [{ seq: 3, digest: "d" }] : [],
    })
    await expectContended(new NeonReceiptStore({ pool: { query }, table: "rcont_fake" }))
  })
})
