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
  new SignJWT({ tenant, scope: `ledger:${scope}` })
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

  it("an agent's result shaped as a release's outputs is 400: no receipt reads as an operator's release", async () => {
    const { app, store } = served()
    const headers = {
      authorization: `Bearer ${await token("a", "agent")}`,
      "content-type": "application/json",
    }
    const post = async (path: string, body: unknown) =>
      app.request(path, { method: "POST", headers, body: JSON.stringify(body) })
    const begin = { tool: "pay", args: { amount: 100 }, meta: { request_id: "forged-1" } }
    const { fence, lease } = (await (await post("/v1/calls", begin)).json()) as {
      fence: number
      lease: string
    }
    const outputs = {
      verified: "completed",
      resolved_by: "alice",
      resolution_reason: "x",
      result: { paid: true },
    }
    for (const operator_release of [true, false, null]) {
      const r = await post("/v1/calls/forged-1/complete", {
        fence,
        lease,
        result: { operator_release, ...outputs },
      })
      expect([r.status, await r.json()]).toMatchObject([400, { error: { code: "invalid_body" } }])
    }
    expect(await store.inner.list()).toEqual([])
    // Below the top level it is the tool's own data.
    const nested = { receipt: { operator_release: true } }
    expect((await post("/v1/calls/forged-1/complete", { fence, lease, result: nested })).status).toBe(200)
    expect((await store.inner.list()).map((r) => r.outputs)).toEqual([nested])
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

describe("edge receipts API: pages and bounds", () => {
  async function filled(count: number, maxVerifyReceipts?: number) {
    const store = new MemoryReceiptStore()
    const emitters = ["agent-a", "agent-b"].map(
      (agentId) => new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId }),
    )
    for (let i = 0; i < count; i++)
      await (emitters[i % 4 === 0 ? 1 : 0] as ReceiptEmitter).emit({
        action: "t",
        actionKind: "task",
        requestId: `q${i}`,
        status: "completed",
      })
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: jwtAuth({ secret: SECRET }),
      receipts: () => ({ emitter: emitters[0] as ReceiptEmitter, keys: { hmac: "k" } }),
      ...(maxVerifyReceipts === undefined ? {} : { maxVerifyReceipts }),
    })
    const headers = {
      authorization: `Bearer ${await token("a", "reader")}`,
      "content-type": "application/json",
    }
    const get = async (query: string) => {
      const r = await app.request(`/v1/receipts${query}`, { headers })
      return { status: r.status, body: (await r.json()) as { receipts: Receipt[]; cursor: string | null } }
    }
    const verify = async (query = "") => {
      const r = await app.request(`/v1/receipts/verify${query}`, { method: "POST", headers, body: "{}" })
      return { status: r.status, body: (await r.json()) as Record<string, unknown> }
    }
    return { store, get, verify }
  }

  async function walk(
    get: (q: string) => Promise<{ status: number; body: { receipts: Receipt[]; cursor: string | null } }>,
    query: string,
  ) {
    const ids: string[] = []
    const sizes: number[] = []
    let cursor: string | null = null
    do {
      const sep = query ? "&" : "?"
      const { status, body } = await get(`${query}${cursor ? `${sep}cursor=${cursor}` : ""}`)
      expect(status).toBe(200)
      ids.push(...body.receipts.map((r) => r.receipt_id))
      sizes.push(body.receipts.length)
      cursor = body.cursor
      if (sizes.length > 100) throw new Error("pages never end")
    } while (cursor !== null)
    return { ids, sizes }
  }

  it("lists 100 by default, at most 500, with a cursor until done; filters page too", async () => {
    const { store, get } = await filled(620)
    const first = await get("")
    expect(first.body.receipts).toHaveLength(100)
    expect(first.body.cursor).toBeTypeOf("string")
    const all = (await store.list()).map((r) => r.receipt_id)
    expect((await walk(get, "")).sizes).toEqual([100, 100, 100, 100, 100, 100, 20])
    expect((await walk(get, "?limit=500")).ids).toEqual(all)
    expect((await walk(get, "?limit=500")).sizes).toEqual([500, 120])
    const b = (await store.list({ agentId: "agent-b" })).map((r) => r.receipt_id)
    expect(b).toHaveLength(155)
    expect((await walk(get, "?agent_id=agent-b&limit=50")).ids).toEqual(b)
    expect((await walk(get, "?ledger=agent-a&limit=7")).ids).toEqual(
      (await store.list({ ledger: "agent-a" })).map((r) => r.receipt_id),
    )
    // A filter that matches nothing scans 20 x limit per page: short pages with a cursor, never one unbounded read.
    expect((await walk(get, "?agent_id=nobody&limit=10")).sizes).toEqual([0, 0, 0, 0])
  })

  it("a receipt holding an integer beyond 2^53 (as stores read the original's) lists as JSON, not a 500", async () => {
    // The file, Neon, Durable Object and Upstash stores read the original's `2**60` as an exact bigint.
    const store = new TamperableStore()
    await new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" }).emit({
      action: "t",
      actionKind: "task",
      requestId: "big",
      status: "completed",
    })
    store.edit = (rs) => rs.map((r) => ({ ...r, outputs: { wei: 2n ** 60n, paid: 100.5 } }))
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: jwtAuth({ secret: SECRET }),
      receipts: () => ({
        emitter: new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" }),
        keys: { hmac: "k" },
      }),
    })
    const r = await app.request("/v1/receipts", {
      headers: { authorization: `Bearer ${await token("a", "reader")}` },
    })
    expect(r.status, await r.clone().text()).toBe(200)
    // JSON has no form of it that every client reads exactly: its decimal digits, as the CLI's --json prints them.
    expect(((await r.json()) as { receipts: Receipt[] }).receipts[0]?.outputs).toEqual({
      wei: "1152921504606846976",
      paid: 100.5,
    })
  })

  it("a bad limit, a forged cursor or an unknown parameter is 400 invalid_query", async () => {
    const { get } = await filled(3)
    for (const q of [
      "?limit=0",
      "?limit=501",
      "?limit=10000",
      "?limit=abc",
      "?limit=-1",
      "?limit=1.5",
      "?cursor=abc",
      "?cursor=-1",
      "?cursor=01",
      `?cursor=${"9".repeat(16)}`,
      "?cursor=",
      "?page=2",
    ]) {
      const r = await get(q)
      expect([q, r.status, (r.body as unknown as { error: { code: string } }).error?.code]).toEqual([
        q,
        400,
        "invalid_query",
      ])
    }
    // A well-formed position past the end is an empty last page.
    expect((await get("?cursor=999999")).body).toEqual({ receipts: [], cursor: null })
  })

  it("verify checks the whole chain but refuses a tenant over maxVerifyReceipts with 413 too_many_receipts", async () => {
    const at = await filled(2500, 2500)
    expect((await at.verify()).body).toMatchObject({ ok: true, valid: 2500 })
    expect((await at.verify("?agent_id=agent-b")).body).toMatchObject({ ok: true, valid: 625 })
    expect((await at.verify("?limit=5")).status).toBe(400)
    const over = await filled(2501, 2500)
    const r = await over.verify()
    expect(r.status).toBe(413)
    expect(r.body).toMatchObject({ error: { code: "too_many_receipts" } })
    // The bound counts the tenant's receipts, not the filter's: a filter cannot smuggle a huge scan in.
    expect((await over.verify("?agent_id=agent-b")).status).toBe(413)
  })

  it("verify refuses receipts over maxVerifyBytes (default 64 MiB) with 413 before reading them all", async () => {
    // 400 receipts of 256 KiB (100 MiB as JSON), built as each page is asked for, as a database store does.
    const report = "x".repeat(256 * 1024)
    let handed = 0
    const store: ReceiptStore = {
      append: () => Promise.reject(new Error("unused")),
      list: () => Promise.reject(new Error("unused")),
      async listPage(o: ReceiptListOptions = {}) {
        const start = Number(o.cursor ?? 0)
        const end = Math.min(400, start + (o.limit ?? 100))
        const receipts: Receipt[] = []
        for (let i = start; i < end; i++, handed++)
          receipts.push({
            receipt_id: `rcpt-${String(i).padStart(16, "0")}`,
            agent_id: "agent-a",
            action: "export",
            action_kind: "tool",
            request_id: `r${i}`,
            inputs: { args: [], kwargs: {} },
            outputs: { report },
            status: "completed",
            timestamp: 1767225600,
            signature: "00",
            error: null,
          })
        return { receipts, cursor: end < 400 ? String(end) : null }
      },
    }
    const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" })
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: jwtAuth({ secret: SECRET }),
      receipts: () => ({ emitter, keys: { hmac: "k" } }),
    })
    const headers = {
      authorization: `Bearer ${await token("a", "reader")}`,
      "content-type": "application/json",
    }
    const r = await app.request("/v1/receipts/verify", { method: "POST", headers, body: "{}" })
    expect(r.status).toBe(413)
    expect(await r.json()).toMatchObject({ error: { code: "too_many_receipts" } })
    expect(handed).toBeLessThanOrEqual(257)
  })
})
