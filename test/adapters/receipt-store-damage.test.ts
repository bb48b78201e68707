// Receipt stores whose stored receipt was damaged by a raw write: Upstash (the real local Redis, written to over RESP,
// read through the REST server) and Neon (Postgres). Every read of the damaged receipt fails closed with
// ReceiptStoreCorruptError naming where it lies and what to do, as the file store does for its lines: on Upstash a
// bare SyntaxError escaped before, and Neon called a repeated member "not JSON".
import { Redis } from "@upstash/redis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { RespConnection } from "../../src/adapters/redis.ts"
import { UpstashReplyError } from "../../src/adapters/upstash.ts"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { MyceliumError } from "../../src/core/errors.ts"
import {
  hmacReceiptSigner,
  ReceiptEmitter,
  type ReceiptStore,
  ReceiptStoreCorruptError,
  verifyReceipts,
} from "../../src/receipts.ts"
import { REDIS_URL, requireUpstash, runTag, UPSTASH_TOKEN, UPSTASH_URL } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const KEY = "receipt-store-damage-key"
const conn = new RespConnection(REDIS_URL)
const pool = neonPool(undefined, 2)
const tables: string[] = []
afterAll(async () => {
  conn.close()
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}`)
  await pool.end()
})
beforeAll(async () => {
  await requireUpstash()
  await requirePostgres(pool)
})

async function emitThree(store: ReceiptStore) {
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "payments" })
  for (const id of ["r0", "r1", "r2"])
    await emitter.emit({ action: "pay", actionKind: "tool", requestId: id, status: "completed" })
  return emitter
}

// The default client parses stored JSON itself; the documented client for exact receipts keeps the text.
const clients = {
  default: () => new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN }),
  text: () => new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN, automaticDeserialization: false }),
}

/** A store holding three chained receipts, and its prefix. */
async function threeReceipts(client: keyof typeof clients) {
  const prefix = `mycelium-test:${runTag("rdmg")}-${Math.random().toString(36).slice(2, 8)}:`
  const store = new UpstashReceiptStore({ redis: clients[client](), prefix })
  return { store, emitter: await emitThree(store), prefix }
}

/** Every read that reaches the damaged item rejects with the typed error, its code and its text. */
async function expectCorrupt(store: ReceiptStore, text: RegExp, before = "1") {
  const reads = [
    () => store.list(),
    () => store.list({ agentId: "payments" }),
    () => store.listPage({ limit: 3 }),
    // A page starting at the damaged one.
    () => store.listPage({ limit: 1, cursor: before }),
    () => store.list().then((r) => verifyReceipts(r, { hmac: KEY })),
  ]
  for (const read of reads) {
    const e = await read().then(
      () => null,
      (err: unknown) => err,
    )
    expect(e).toBeInstanceOf(ReceiptStoreCorruptError)
    expect(e).toBeInstanceOf(MyceliumError)
    expect(e).toMatchObject({ code: "receipt_store_corrupt", message: expect.stringMatching(text) })
  }
}

describe("a receipt in the Upstash log damaged by a raw write", () => {
  for (const client of ["default", "text"] as const) {
    it(`${client} client: an item that is not JSON is receipt_store_corrupt, naming the list and index`, async () => {
      const { store, prefix } = await threeReceipts(client)
      await conn.command("LSET", `${prefix}log`, 1, '{"receipt_id": "rcpt-torn", "agent_')
      await expectCorrupt(store, new RegExp(`^${prefix}log item 1 is not JSON: .+, then retry$`))
      // The pages before it still read: only what reaches the damaged item fails.
      expect((await store.listPage({ limit: 1 })).receipts).toHaveLength(1)
    })
  }

  it("text client: an item naming a member twice is receipt_store_corrupt (only the last copy is signed)", async () => {
    const { store, prefix } = await threeReceipts("text")
    const [line] = (await conn.command("LRANGE", `${prefix}log`, 2, 2)) as [string]
    const forged = line.replace('{"receipt_id"', '{"status": "failed", "receipt_id"')
    expect(forged).not.toBe(line)
    await conn.command("LSET", `${prefix}log`, 2, forged)
    await expectCorrupt(
      store,
      new RegExp(`^${prefix}log item 2 names a member twice, which no signature covers`),
      "2",
    )
  })

  it("an item that is JSON but no receipt is receipt_store_corrupt, naming the item", async () => {
    const { store, prefix } = await threeReceipts("text")
    await conn.command("LSET", `${prefix}log`, 1, "[]")
    await expectCorrupt(store, new RegExp(`^${prefix}log item 1 is not a receipt \\(not a JSON object\\)`))
  })
})

describe("an Upstash chain tail damaged by a raw write", () => {
  for (const [what, raw] of [
    ["not JSON", '{"seq": 2, "dig'],
    ["JSON but no tail", "[]"],
  ] as const) {
    it(`${what}: an append fails closed, typed, naming the tail key; nothing is appended`, async () => {
      const { emitter, store, prefix } = await threeReceipts("text")
      await conn.command("SET", `${prefix}tail:payments`, raw)
      const e = await emitter
        .emit({ action: "pay", actionKind: "tool", requestId: "r3", status: "completed" })
        .then(
          () => null,
          (err: unknown) => err,
        )
      // An unreadable reply: a damaged key and a client's fake answer to an aborted request look alike.
      expect(e).toBeInstanceOf(UpstashReplyError)
      expect(e).toBeInstanceOf(MyceliumError)
      expect(e).toMatchObject({
        code: "upstash_unexpected_reply",
        message: expect.stringContaining(`${prefix}tail:payments`),
      })
      expect(await conn.command("LLEN", `${prefix}log`)).toBe(3)
      expect(await verifyReceipts(await store.list(), { hmac: KEY }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: 3,
      })
    })
  }
})

describe("a receipt in a Neon table damaged by a raw write", () => {
  async function threeRows() {
    const table = `rdmg_${runTag("t").replaceAll("-", "_")}_${Math.random().toString(36).slice(2, 8)}`
    tables.push(table)
    const store = new NeonReceiptStore({ pool, table })
    await store.migrate()
    await emitThree(store)
    const damage = (id: number, record: string) =>
      pool.query(`UPDATE ${table} SET record = $1 WHERE id = $2`, [record, id])
    return { store, table, damage }
  }

  it("a record that is not JSON is receipt_store_corrupt, naming the table and row", async () => {
    const { store, table, damage } = await threeRows()
    await damage(2, '{"receipt_id": "rcpt-torn", "ag')
    await expectCorrupt(store, new RegExp(`^${table} row 2 is not JSON: .+, then retry$`))
  })

  it("a record naming a member twice is receipt_store_corrupt, and says so", async () => {
    const { store, table, damage } = await threeRows()
    const { rows } = await pool.query(`SELECT record FROM ${table} WHERE id = 3`)
    const line = String(rows[0]?.record)
    const forged = line.replace('{"receipt_id"', '{"status": "failed", "receipt_id"')
    expect(forged).not.toBe(line)
    await damage(3, forged)
    await expectCorrupt(
      store,
      new RegExp(`^${table} row 3 names a member twice, which no signature covers`),
      "2",
    )
  })

  // The tail is the newest row's link: one without its digest was read as the digest "null", and the next genuine
  // receipt was sealed on it (prev "null"), a broken chain no repair of the damaged row could mend.
  it("a chain link that is no link is receipt_store_corrupt, and an append onto it writes nothing", async () => {
    const { store, table } = await threeRows()
    await pool.query(`UPDATE ${table} SET link = link - 'digest' WHERE id = 3`)
    await expectCorrupt(
      store,
      new RegExp(`^${table} row 3 is not a receipt \\('chain' is not a receipt link\\)`),
      "2",
    )
    const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "payments" })
    const e = await emitter
      .emit({ action: "pay", actionKind: "tool", requestId: "r3", status: "completed" })
      .catch((err: unknown) => err)
    expect(e).toBeInstanceOf(ReceiptStoreCorruptError)
    expect(e).toMatchObject({ message: expect.stringContaining(`${table} row 3`) })
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]).toEqual({ n: 3 })
  })
})
