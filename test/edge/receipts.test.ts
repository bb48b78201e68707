import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import {
  type AuditReceiptRecord,
  type ChainSealer,
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  type ReceiptListOptions,
  type ReceiptStore,
} from "../../src/receipts.ts"

const SECRET = "test-secret-with-enough-entropy-0123456789"
const token = (tenant: string, scope: string) =>
  new SignJWT({ tenant, scope })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("ops@example")
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(SECRET))

/** A store whose stored receipts a test can tamper with, as an attacker with database access could. */
class TamperableStore implements ReceiptStore {
  readonly inner = new MemoryReceiptStore()
  edit: ((r: Receipt[]) => Receipt[]) | null = null
  append(record: AuditReceiptRecord, chain?: ChainSealer) {
    return this.inner.append(record, chain)
  }
  async list() {
    const all = await this.inner.list()
    return this.edit ? this.edit(all) : all
  }
  async listPage(options?: ReceiptListOptions) {
    const page = await this.inner.listPage(options)
    return { ...page, receipts: this.edit ? this.edit(page.receipts) : page.receipts }
  }
}

function served() {
  const storage = new MemoryLedgerStorage()
  const store = new TamperableStore()
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("tenant-a-key"), store, agentId: "agent-a" })
  const app = createLedgerApp({
    storage: (tenant) => (tenant === "a" ? storage : new MemoryLedgerStorage()),
    authenticate: jwtAuth({ secret: SECRET }),
    receipts: (tenant) => {
      if (tenant !== "a") throw new Error("unexpected tenant")
      return { emitter, keys: { hmac: "tenant-a-key" } }
    },
  })
  return { app, storage, store, emitter }
}

describe("edge receipts API", () => {
  it("an operator release through the API emits a receipt; readers list and verify it; tampering shows", async () => {
    const { app, storage, store, emitter } = served()
    const ledger = new ActionLedger({ storage, receipts: emitter, onWarning: () => {} })
    const t = ledger.tool(
      {
        name: "charge",
        binding: { agentId: "agent-a", policyVersion: "1", sideEffectClass: "keyed_mutate" },
      },
      async (_a: Record<string, never>, tx) =>
        tx.sideEffect(() => {
          throw new Error("timeout")
        }),
    )
    const done = ledger.tool(
      { name: "ok", binding: { agentId: "agent-a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async () => 1,
    )
    await expect(t({}, { toolCallId: "c1" })).rejects.toThrow()
    await done({}, { toolCallId: "c2" })
    const [row] = await ledger.listTransitions({ stuck: true })
    const op = { authorization: `Bearer ${await token("a", "operator")}`, "content-type": "application/json" }
    const rel = await app.request(`/v1/transitions/${row?.requestId}/release`, {
      method: "POST",
      headers: op,
      body: JSON.stringify({ verified: "not_executed", reason: "provider shows no charge" }),
    })
    expect(rel.status).toBe(200)

    const reader = {
      authorization: `Bearer ${await token("a", "reader")}`,
      "content-type": "application/json",
    }
    const listed = (await (await app.request("/v1/receipts", { headers: reader })).json()) as {
      receipts: Receipt[]
    }
    expect(listed.receipts.map((r) => [r.action, r.status])).toEqual([
      ["ok", "completed"],
      ["charge", "failed"],
    ])
    expect(listed.receipts[1]?.outputs).toMatchObject({ operator_release: true, resolved_by: "ops@example" })
    const verify = () => app.request("/v1/receipts/verify", { method: "POST", headers: reader, body: "{}" })
    expect(await (await verify()).json()).toMatchObject({ ok: true, valid: 2 })

    store.edit = (all) => all.slice(1)
    expect(await (await verify()).json()).toMatchObject({ ok: false, failures: [{ reason: "gap" }] })
  })

  it("calls an agent runs through the API (RemoteLedger) get one receipt per outcome, linked from the row", async () => {
    const { app, storage, store } = served()
    const agentToken = await token("a", "agent")
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
      const headers = new Headers(init?.headers)
      headers.set("authorization", `Bearer ${agentToken}`)
      return app.fetch(new Request(input, { ...init, headers }))
    }) as typeof globalThis.fetch
    const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {} })
    const binding = { agentId: "agent-a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
    let runs = 0
    const pay = remote.tool({ name: "pay", binding }, async (a: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        return { charged: a.amount }
      }),
    )
    expect(await pay({ amount: 7 }, { toolCallId: "r1" })).toEqual({ charged: 7 })
    // A replay returns the stored result: no second run, no second receipt.
    expect(await pay({ amount: 7 }, { toolCallId: "r1" })).toEqual({ charged: 7 })
    expect(runs).toBe(1)
    const receipts = await store.inner.list()
    expect(receipts.map((r) => [r.action, r.status, r.outputs])).toEqual([
      ["pay", "completed", { charged: 7 }],
    ])
    const rows = []
    for await (const r of storage.list()) rows.push(r)
    expect(rows.map((r) => r.receiptRef)).toEqual([receipts[0]?.receipt_id])
    const reader = {
      authorization: `Bearer ${await token("a", "reader")}`,
      "content-type": "application/json",
    }
    const verify = await app.request("/v1/receipts/verify", { method: "POST", headers: reader, body: "{}" })
    expect(await verify.json()).toMatchObject({ ok: true, valid: 1 })
  })

  it("scopes and configuration are enforced with JSON errors", async () => {
    const { app } = served()
    const agent = { authorization: `Bearer ${await token("a", "agent")}` }
    const r = await app.request("/v1/receipts", { headers: agent })
    expect(r.status).toBe(403)
    expect(((await r.json()) as { error: { code: string } }).error.code).toBeTypeOf("string")
    const bad = await app.request("/v1/receipts/verify", {
      method: "POST",
      headers: { authorization: `Bearer ${await token("a", "reader")}`, "content-type": "application/json" },
      body: JSON.stringify({ heads: { x: { seq: "one" } } }),
    })
    expect(bad.status).toBe(400)
    const plain = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const none = await plain.request("/v1/receipts")
    expect(none.status).toBe(404)
    expect(await none.json()).toMatchObject({ error: { code: "receipts_not_configured" } })
  })
})
