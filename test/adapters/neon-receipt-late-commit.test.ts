// A receipt whose append commits late is still paged: Postgres takes a BIGSERIAL id at INSERT, not at COMMIT, so an
// append holding id N could commit after one holding N+1 had committed and a reader's page had ended at N+1, and
// that reader (GET /v1/receipts, `receipts export`) never saw N: a gap in its chain. The late append here is the
// store itself over a Client whose transaction is held open between its INSERT and COMMIT; the other append, the
// reader and list() go over each Neon transport (WebSocket Pool, HTTP neon()).
import { neon, neonConfig, type Pool } from "@neondatabase/serverless"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import {
  hmacReceiptSigner,
  type Receipt,
  ReceiptEmitter,
  type ReceiptStore,
  verifyReceipts,
} from "../../src/receipts.ts"
import { DATABASE_URL, runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"
import { type NeonHttpEmulation, startNeonHttpEmulation } from "./servers/neon-http.ts"

const pool: Pool = neonPool(undefined, 4)
const tables: string[] = []
let emu: NeonHttpEmulation | undefined

beforeAll(async () => {
  await requirePostgres(pool)
  emu = await startNeonHttpEmulation()
  neonConfig.fetchEndpoint = emu.endpoint
})
afterAll(async () => {
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}`)
  await pool.end()
  await emu?.stop()
})

const emitter = (store: ReceiptStore, agentId: string) =>
  new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId })
const emit = (e: ReceiptEmitter, requestId: string) =>
  e.emit({ action: "pay", actionKind: "tool", requestId, status: "completed" })
const ids = (rs: Receipt[]) => rs.map((r) => r.receipt_id)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(["websocket", "http"] as const)("neon receipts over %s", (transport) => {
  it("an append that commits late is paged by a reader resuming from its cursor, none skipped", async () => {
    const table = `rlate_${runTag(transport).replaceAll("-", "_")}`.toLowerCase()
    tables.push(table)
    const store = new NeonReceiptStore(
      transport === "websocket" ? { pool, table } : { sql: neon(DATABASE_URL), table },
    )
    await store.migrate()
    const held = await pool.connect()
    try {
      await held.query("BEGIN")
      // Its INSERT has run (the row has its id), its COMMIT has not.
      const late = await emit(emitter(new NeonReceiptStore({ pool: held, table }), "late"), "r-late")
      const onTime = emit(emitter(store, "on-time"), "r-on-time")
      // Long enough for the other append to commit, were nothing holding it.
      await Promise.race([onTime, sleep(300)])

      // A reader a receipt at a time, keeping the last cursor it was handed.
      const seen: Receipt[] = []
      let cursor: string | undefined
      const read = async () => {
        const page = await store.listPage({ limit: 1, ...(cursor ? { cursor } : {}) })
        seen.push(...page.receipts)
        if (page.cursor !== null) cursor = page.cursor
        return page
      }
      await read()
      await held.query("COMMIT")
      const other = await onTime
      // The late chain goes on past it: a reader that skipped it holds a gap in that chain.
      const next = await emit(emitter(store, "late"), "r-late-2")
      for (let n = 0; (await read()).receipts.length > 0; n++) expect(n).toBeLessThan(10)

      const all = await store.list()
      expect(ids(all).sort()).toEqual([late.receipt_id, other.receipt_id, next.receipt_id].sort())
      expect(await verifyReceipts(seen, { hmac: "k" }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: 3,
      })
      expect(ids(seen)).toEqual(ids(all))
    } finally {
      await held.query("ROLLBACK").catch(() => undefined)
      held.release()
    }
  }, 30_000)
})
