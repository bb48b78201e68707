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

function api(tenant: string, vars: Record<string, unknown> = {}, scope = "ledger:agent ledger:reader") {
  return async (method: string, path: string, body?: unknown) =>
    callWorker(
      { ...(env as object), LEDGER_JWT_SECRET: SECRET, ...vars },
      await signToken(SECRET, { tenant, scope }),
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

// Rows under one tool-call id were read whole inside the claim's answer: 20 rows of ~1.8 MB made it outgrow the
// 32 MiB an RPC may return, after the claim had committed (a bare Error, the row IN_FLIGHT, every later claim and
// findByDispatchId failing the same way). Drifted re-sends of large arguments pile such rows up. Now they are read
// whole up to 8 MiB of row text, and refused past it, never cut (a cut list could drop the row that refuses).
describe("a tool-call id's rows, up to and past what one read holds", () => {
  const memo = "x".repeat(1_800_000)
  const sibling = (i: number, now: number) => ({
    ...newEntry({ requestId: `memo-${i}`, tool: "memo", owner: "w" }, now),
    terminalOutcome: "FAILED_BEFORE_EFFECT" as const,
    status: "failed" as const,
    kwargs: { tool_call_id: "call_1", memo },
  })
  const claim = (storage: DurableObjectLedgerStorage, requestId: string, now: number) =>
    storage.tryClaimInflight(
      { ...newEntry({ requestId, tool: "t", owner: "W" }, now), kwargs: { tool_call_id: "call_1" } },
      60,
      now,
      { reclaimFence: null, dispatchId: "call_1" },
    )

  it("7.2 MB of rows: the claim carries every sibling, GET /v1/dispatch lists them, drift is refused", async () => {
    const t = `sib-${run}`
    const storage = new DurableObjectLedgerStorage(LEDGER, { name: `tenant:${t}` })
    const now = Date.now() / 1000
    for (let i = 0; i < 4; i++) await storage.set(sibling(i, now))
    const call = api(t)
    const send = (id: string) =>
      call("POST", "/v1/calls", { tool: "pay", args: { id }, binding, meta: { tool_call_id: "call_1" } })
    const first = await send("a")
    expect(first.json.status).toBe("run")
    const direct = await claim(storage, "direct", now)
    expect(direct).toMatchObject({ outcome: "claimed", entry: { owner: "W", fence: 1 } })
    const siblings = direct.outcome === "claimed" ? (direct.dispatchSiblings ?? []) : []
    expect(siblings.map((e) => e.requestId).sort()).toEqual(
      ["memo-0", "memo-1", "memo-2", "memo-3", first.json.request_id as string, "direct"].sort(),
    )
    const drifted = await send("b")
    expect([drifted.status, drifted.json.error?.code]).toEqual([409, "args_drift"])
    const listed = await api(t, {}, "ledger:store")("GET", "/v1/dispatch/call_1")
    expect(listed.status).toBe(200)
    // The four, the call, the direct claim and the drifted re-send's own row.
    expect((listed.json.rows as unknown[]).length).toBe(7)
  }, 120_000)

  it("9 MB of rows: the claim still answers, without siblings; findByDispatchId is refused typed; a call does not run", async () => {
    const t = `sibmax-${run}`
    const storage = new DurableObjectLedgerStorage(LEDGER, { name: `tenant:${t}` })
    const now = Date.now() / 1000
    for (let i = 0; i < 5; i++) await storage.set(sibling(i, now))
    const claimed = await claim(storage, "new", now)
    expect(claimed.outcome).toBe("claimed")
    expect("dispatchSiblings" in claimed).toBe(false)
    await expect(storage.findByDispatchId("call_1")).rejects.toMatchObject({
      name: "LedgerDispatchOverflowError",
      code: "dispatch_rows_over_budget",
    })
    expect(await storage.findByDispatchId("call_2")).toEqual([])
    const refused = await api(t)("POST", "/v1/calls", {
      tool: "pay",
      args: { id: "a" },
      binding,
      meta: { tool_call_id: "call_1" },
    })
    expect(refused.json.status).not.toBe("run")
  }, 120_000)
})
