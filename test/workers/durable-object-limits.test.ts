// The Durable Object stores at workerd's limits, in workerd. A ledger reopened with another shard count looked for
// its rows in the wrong objects (a completed payment ran again); pages of ~1 MB rows outgrew the 32 MiB a Durable
// Object RPC may return (listing answered 503 forever); and a receipt over SQLite's 2 MB value limit, which a result
// the row limit allows makes, was never stored (409 receipt_append_failed on every call).
import { env } from "cloudflare:workers"
import { exportJWK, generateKeyPair } from "jose"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { DurableObjectReceiptStore } from "../../src/adapters/durable-object-guards.ts"
import type { AuditReceiptRecord } from "../../src/core/receipts/record.ts"
import { callWorker, signToken } from "./worker-fetch.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
const SECRET = "workerd-limits-secret-workerd-limits-secret"
const run = `l${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const binding = { agent_id: "pay", policy_version: "1", side_effect_class: "keyed_mutate" }

function api(tenant: string, vars: Record<string, unknown> = {}) {
  return async (method: string, path: string, body?: unknown) =>
    callWorker(
      { ...(env as object), LEDGER_JWT_SECRET: SECRET, ...vars },
      await signToken(SECRET, { tenant, scope: "ledger:agent ledger:reader" }),
      method,
      path,
      body,
    )
}

async function pay(call: ReturnType<typeof api>, id: string, result: unknown) {
  const b = await call("POST", "/v1/calls", { tool: "pay", args: { id }, binding, meta: { request_id: id } })
  expect(b.json.status).toBe("run")
  return call("POST", `/v1/calls/${id}/complete`, { fence: b.json.fence, lease: b.json.lease, result })
}

function record(i: number, outputs: string): AuditReceiptRecord {
  return {
    receipt_id: `rcpt-${i}`,
    agent_id: "big",
    action: "pay",
    action_kind: "tool",
    request_id: `r${i}`,
    inputs: { args: [], kwargs: { i } },
    outputs,
    status: "completed",
    timestamp: 1767225600.5,
    signature: "00",
    error: null,
  }
}

describe("Durable Object stores at workerd's limits", () => {
  it("a ledger reopened with another shard count is 503 misconfigured, never a second run", async () => {
    const t = `shards-${run}`
    const done = await pay(api(t), "pay-1", { charge: "ch_1" })
    expect(done.status).toBe(200)
    const again = await api(t, { LEDGER_SHARDS: "4" })("POST", "/v1/calls", {
      tool: "pay",
      args: { id: "pay-1" },
      binding,
      meta: { request_id: "pay-1" },
    })
    expect(again.status).toBe(503)
    expect(again.json.error?.code).toBe("misconfigured")
    expect(again.json.error?.message).toContain("set shards (LEDGER_SHARDS) back to 1")
    const wide = new DurableObjectLedgerStorage(LEDGER, { name: `wide-${run}`, shards: 3 })
    await wide.set(newEntry({ requestId: "a", tool: "t", owner: "w" }, 1))
    const narrow = new DurableObjectLedgerStorage(LEDGER, { name: `wide-${run}`, shards: 2 })
    await expect(narrow.get("a")).rejects.toMatchObject({
      name: "LedgerShardCountError",
      code: "misconfigured",
    })
    expect((await wide.get("a"))?.tool).toBe("t")
  })

  it("pages of ~1 MB ledger rows stay under the 32 MiB an RPC may return", async () => {
    const storage = new DurableObjectLedgerStorage(LEDGER, { name: `big-${run}` })
    const ids = Array.from({ length: 40 }, (_, i) => `r${String(i).padStart(2, "0")}`)
    for (const requestId of ids)
      await storage.set({
        ...newEntry({ requestId, tool: "t", owner: "w" }, 1),
        result: "x".repeat(1_000_000),
      })
    const listed: string[] = []
    for await (const e of storage.list()) listed.push(e.requestId)
    expect(listed).toEqual(ids)
  }, 120_000)

  it("pages of ~1 MB receipts stay under the 32 MiB an RPC may return", async () => {
    const receipts = new DurableObjectReceiptStore(LEDGER, { name: `bigr-${run}` })
    for (let i = 0; i < 40; i++) await receipts.append(record(i, "x".repeat(1_000_000)))
    const all = await receipts.list()
    expect(all.map((r) => r.receipt_id)).toEqual(Array.from({ length: 40 }, (_, i) => `rcpt-${i}`))
    const page = await receipts.listPage({ limit: 100 })
    expect(page.receipts.length).toBeGreaterThan(0)
    expect(page.receipts.length).toBeLessThan(40)
    expect(page.cursor).not.toBeNull()
  }, 120_000)

  it("GET /v1/receipts over the object ends a page of 500 at 8 MiB, and the next page goes on from there", async () => {
    const tenant = `rpage-${run}`
    const store = new DurableObjectReceiptStore(LEDGER, { name: `tenant:${tenant}` })
    for (let i = 0; i < 40; i++) await store.append(record(i, "x".repeat(300_000)))
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
    const jwk = JSON.stringify({ ...(await exportJWK(privateKey)), kid: `k-${run}` })
    const call = api(tenant, { LEDGER_RECEIPT_JWK: jwk })
    const sizes: number[] = []
    const ids: string[] = []
    let cursor: unknown = null
    do {
      const r = await call("GET", `/v1/receipts?limit=500${cursor ? `&cursor=${cursor}` : ""}`)
      const receipts = r.json.receipts as Array<{ receipt_id: string }>
      sizes.push(receipts.length)
      ids.push(...receipts.map((x) => x.receipt_id))
      cursor = r.json.cursor
    } while (cursor !== null)
    // About 300 KB a receipt: 27 fit in 8 MiB. The object already cut its pages there; the route agrees with it.
    expect(sizes).toEqual([27, 13])
    expect(ids).toEqual(Array.from({ length: 40 }, (_, i) => `rcpt-${i}`))
  }, 120_000)

  it("a receipt over SQLite's 2 MB value limit is stored whole: a ~1,000 KB result is receipted", async () => {
    const store = new DurableObjectReceiptStore(LEDGER, { name: `huge-${run}` })
    const outputs = `${"y".repeat(4_400_000)}é𝄞`
    await store.append(record(0, outputs))
    const [back] = await store.list()
    expect(back?.outputs).toBe(outputs)

    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
    const jwk = JSON.stringify({ ...(await exportJWK(privateKey)), kid: `k-${run}` })
    const call = api(`rs-${run}`, { LEDGER_RECEIPT_JWK: jwk })
    const done = await pay(call, "big-1", { blob: "x".repeat(1_000_000) })
    expect(done.status, JSON.stringify(done.json).slice(0, 300)).toBe(200)
    expect((await call("POST", "/v1/receipts/verify", {})).json).toMatchObject({ ok: true, valid: 1 })
  }, 120_000)
})
