// A Durable Object receipt store whose row was damaged by a raw write, in workerd: every read of the damaged row fails
// closed with ReceiptStoreCorruptError naming the row and what to do, as the file store does for its lines, and the
// worker answers 503 receipt_store_corrupt. A bare SyntaxError escaped before (500 internal_error over HTTP), and a
// row of JSON that is no receipt was handed out as one.
import { runInDurableObject } from "cloudflare:test"
import { env } from "cloudflare:workers"
import { exportJWK, generateKeyPair } from "jose"
import { describe, expect, it } from "vitest"
import type { LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { DurableObjectReceiptStore } from "../../src/adapters/durable-object-guards.ts"
import { MyceliumError } from "../../src/core/errors.ts"
import {
  hmacReceiptSigner,
  ReceiptEmitter,
  ReceiptStoreCorruptError,
  verifyReceipts,
} from "../../src/receipts.ts"
import { callWorker, signToken } from "./worker-fetch.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
const SECRET = "workerd-damage-secret-workerd-damage-secret"
const KEY = "durable-object-receipt-damage-key"
const run = `d${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`

interface SqlState {
  storage: { sql: { exec(q: string, ...b: unknown[]): { toArray(): Array<Record<string, unknown>> } } }
}

/** Runs one statement in the object `name`'s own SQLite: the raw write no store makes. */
function sql(name: string, query: string, ...bindings: unknown[]) {
  const stub = LEDGER.get(LEDGER.idFromName(name)) as Parameters<typeof runInDurableObject>[0]
  return runInDurableObject(stub, (_, state) =>
    (state as unknown as SqlState).storage.sql.exec(query, ...bindings).toArray(),
  )
}

/** A store in a fresh object holding three chained receipts (rows 1 to 3). */
async function threeReceipts(name: string) {
  const store = new DurableObjectReceiptStore(LEDGER, { name })
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "payments" })
  for (const id of ["r0", "r1", "r2"])
    await emitter.emit({ action: "pay", actionKind: "tool", requestId: id, status: "completed" })
  return { store, emitter }
}

/** Every read that reaches the damaged row rejects with the typed error, its code and its text. */
async function expectCorrupt(store: DurableObjectReceiptStore, text: RegExp, before = "1") {
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

describe("a Durable Object receipt row damaged by a raw write", () => {
  it("a row that is not JSON is receipt_store_corrupt, naming the table and row", async () => {
    const name = `notjson-${run}`
    const { store } = await threeReceipts(name)
    await sql(
      name,
      "UPDATE mycelium_audit_receipts SET receipt = ? WHERE id = 2",
      '{"receipt_id": "rcpt-torn", "ag',
    )
    await expectCorrupt(store, /^mycelium_audit_receipts row 2 is not JSON: .+, then retry$/)
    // The page before it still reads: only what reaches the damaged row fails.
    expect((await store.listPage({ limit: 1 })).receipts).toHaveLength(1)
  })

  it("a row naming a member twice is receipt_store_corrupt (only the last copy is signed)", async () => {
    const name = `twice-${run}`
    const { store } = await threeReceipts(name)
    const [row] = await sql(name, "SELECT receipt FROM mycelium_audit_receipts WHERE id = 3")
    const line = String(row?.receipt)
    const forged = line.replace('{"receipt_id"', '{"status": "failed", "receipt_id"')
    expect(forged).not.toBe(line)
    await sql(name, "UPDATE mycelium_audit_receipts SET receipt = ? WHERE id = 3", forged)
    await expectCorrupt(
      store,
      /^mycelium_audit_receipts row 3 names a member twice, which no signature covers/,
      "2",
    )
  })

  it("a row of JSON that is no receipt is receipt_store_corrupt, not handed out as a receipt", async () => {
    const name = `shape-${run}`
    const { store } = await threeReceipts(name)
    await sql(name, "UPDATE mycelium_audit_receipts SET receipt = ? WHERE id = 2", "[]")
    await expectCorrupt(store, /^mycelium_audit_receipts row 2 is not a receipt \(not a JSON object\)/)
  })

  it("an append still lands after the damaged row, and the damage stays reported", async () => {
    const name = `append-${run}`
    const { store, emitter } = await threeReceipts(name)
    await sql(name, "UPDATE mycelium_audit_receipts SET receipt = ? WHERE id = 2", "{")
    await emitter.emit({ action: "pay", actionKind: "tool", requestId: "r3", status: "completed" })
    expect(await sql(name, "SELECT COUNT(*) AS n FROM mycelium_audit_receipts")).toEqual([{ n: 4 }])
    await expectCorrupt(store, /^mycelium_audit_receipts row 2 is not JSON/)
  })

  it("over HTTP: GET /v1/receipts and POST /v1/receipts/verify answer 503 receipt_store_corrupt", async () => {
    const tenant = `http-${run}`
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
    const jwk = JSON.stringify({ ...(await exportJWK(privateKey)), kid: `k-${run}` })
    const vars = { ...(env as object), LEDGER_JWT_SECRET: SECRET, LEDGER_RECEIPT_JWK: jwk }
    const token = await signToken(SECRET, { tenant, scope: "ledger:agent ledger:reader" })
    const call = (method: string, path: string, body?: unknown) => callWorker(vars, token, method, path, body)
    await threeReceipts(`tenant:${tenant}`)
    expect((await call("GET", "/v1/receipts")).json.receipts).toHaveLength(3)
    await sql(`tenant:${tenant}`, "UPDATE mycelium_audit_receipts SET receipt = ? WHERE id = 2", "{")
    for (const [method, path, body] of [
      ["GET", "/v1/receipts", undefined],
      ["POST", "/v1/receipts/verify", {}],
    ] as const) {
      const r = await call(method, path, body)
      expect([r.status, r.json.error?.code]).toEqual([503, "receipt_store_corrupt"])
    }
  })
})

// The tail is read from the digest column, not the receipt: a raw write that emptied it was read as the digest
// "null", and the next genuine receipt was sealed on it (prev "null"), a broken chain no repair of the column could
// mend. The receipts themselves still verify; the append is refused until the column is repaired.
describe("a Durable Object chain tail whose digest column a raw write emptied", () => {
  it("fails the append as receipt_store_corrupt, naming it; nothing is appended", async () => {
    const name = `tail-${run}`
    const { store, emitter } = await threeReceipts(name)
    await sql(name, "UPDATE mycelium_audit_receipts SET digest = NULL WHERE id = 3")
    const e = await emitter
      .emit({ action: "pay", actionKind: "tool", requestId: "r3", status: "completed" })
      .then(
        () => null,
        (err: unknown) => err,
      )
    expect(e).toBeInstanceOf(ReceiptStoreCorruptError)
    expect(e).toMatchObject({
      code: "receipt_store_corrupt",
      message: expect.stringMatching(/^mycelium_audit_receipts chain 'payments' seq 2 has no digest/),
    })
    expect(await sql(name, "SELECT COUNT(*) AS n FROM mycelium_audit_receipts")).toEqual([{ n: 3 }])
    expect((await verifyReceipts(await store.list(), { hmac: KEY }, { requireChain: true })).ok).toBe(true)
  })
})
