// Adversarial review of the worker's LEDGER_RECEIPT_JWK, in workerd. An operator's key in the form Web Crypto
// exports it (`key_ops: ["sign"]`, `ext`) signed every receipt but the worker's own /v1/receipts/verify reported
// each one bad_signature (the public key it derived kept `key_ops: ["sign"]`, which cannot verify); a private key
// whose public half belongs to another key signed receipts nobody could verify. Tenants stay apart when they ask for
// each other's receipts by filter.
import { env } from "cloudflare:workers"
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import worker from "../../src/edge/worker.ts"

const SECRET = "workerd-adversarial-receipts-secret-0123"
const run = `adv${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`

function served(receiptJwk: string) {
  const bindings = { ...(env as object), LEDGER_JWT_SECRET: SECRET, LEDGER_RECEIPT_JWK: receiptJwk } as never
  return async (tenant: string, scope: string, method: string, path: string, body?: unknown) => {
    const token = await new SignJWT({ tenant, scope })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("someone")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET))
    return worker.fetch(
      new Request(`http://edge.test${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
      bindings,
      {},
    )
  }
}

async function pay(api: ReturnType<typeof served>, tenant: string, callId: string) {
  const begun = (await (
    await api(tenant, "ledger:agent", "POST", "/v1/calls", {
      tool: "send_payment",
      args: { amount: 1 },
      binding: { agent_id: "pay", policy_version: "1", side_effect_class: "keyed_mutate" },
      meta: { tool_call_id: callId },
    })
  ).json()) as { status: string; request_id: string; fence: number; lease: string }
  expect(begun.status).toBe("run")
  const done = await api(tenant, "ledger:agent", "POST", `/v1/calls/${begun.request_id}/complete`, {
    fence: begun.fence,
    lease: begun.lease,
    result: { ok: true },
  })
  expect(done.status, await done.clone().text()).toBe(200)
}

// A P-256 private key exactly as `crypto.subtle.exportKey("jwk", privateKey)` writes it, plus a kid.
async function webCryptoP256() {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair
  return { ...((await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey), kid: `wc-${run}` }
}

describe("worker receipts under attack", () => {
  it("a key as Web Crypto exports it (key_ops, ext) signs receipts the worker's own verify accepts", async () => {
    const jwk = await webCryptoP256()
    expect(jwk.key_ops).toEqual(["sign"])
    const api = served(JSON.stringify(jwk))
    const tenant = `wc-${run}`
    await pay(api, tenant, "c1")
    await pay(api, tenant, "c2")
    const r = await api(tenant, "ledger:reader", "POST", "/v1/receipts/verify", { require_chain: true })
    expect(r.status).toBe(200)
    expect(await r.json()).toMatchObject({ ok: true, valid: 2 })
  })

  it("a private key whose public half is another key's is 503 misconfigured, not receipts nobody can verify", async () => {
    const a = await webCryptoP256()
    const b = await webCryptoP256()
    const mixed = { ...a, x: b.x, y: b.y }
    const r = await served(JSON.stringify(mixed))(`mx-${run}`, "ledger:reader", "GET", "/v1/receipts")
    const body = await r.text()
    expect([r.status, JSON.parse(body).error.code]).toEqual([503, "misconfigured"])
    expect(body).toContain("LEDGER_RECEIPT_JWK")
    expect(body).not.toContain(a.d as string)
  })

  it("a reader asking for another tenant's agent or chain by filter gets none of its receipts", async () => {
    const api = served(JSON.stringify(await webCryptoP256()))
    const victim = `victim-${run}`
    const reader = `reader-${run}`
    await pay(api, victim, "v1")
    for (const q of [`agent_id=${victim}`, `ledger=${victim}`, "cursor=0", "format=jsonl"]) {
      const r = await api(reader, "ledger:reader", "GET", `/v1/receipts?${q}`)
      expect(r.status).toBe(200)
      expect(new TextDecoder().decode(await r.arrayBuffer())).not.toContain(victim)
    }
    const v = await api(reader, "ledger:reader", "POST", `/v1/receipts/verify?agent_id=${victim}`, {})
    expect(await v.json()).toMatchObject({ ok: true, valid: 0 })
    // The victim's own reader still sees its one receipt.
    const own = await api(victim, "ledger:reader", "GET", `/v1/receipts?agent_id=${victim}`)
    expect(((await own.json()) as { receipts: unknown[] }).receipts).toHaveLength(1)
  })
})
