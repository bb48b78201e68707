// The worker entry with LEDGER_RECEIPT_JWK, in workerd: a tenant's calls are signed into its own Durable Object,
// its auditor exports them (format=jsonl) and verifies them with the public key alone; another tenant sees none, even
// asking by filter; a bad key is a 503 `misconfigured` that never echoes the secret. Under attack too: a key in the
// form Web Crypto exports it (`key_ops: ["sign"]`, `ext`) once signed receipts the worker's own verify called
// bad_signature, and a private key whose public half belongs to another key would sign receipts nobody can verify.
import { env } from "cloudflare:workers"
import { exportJWK, generateKeyPair, SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { parseReceiptJson } from "../../src/adapter-kit.ts"
import { type Receipt, verifyReceipts } from "../../src/core/receipts/index.ts"
import { jwksVerifier } from "../../src/core/receipts/jws.ts"
import worker from "../../src/edge/worker.ts"

const SECRET = "workerd-receipts-secret-workerd-receipts"
const run = `r${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`

async function keyPair(crv: "Ed25519" | "P-256") {
  const { privateKey, publicKey } = await generateKeyPair(crv === "Ed25519" ? "EdDSA" : "ES256", {
    crv,
    extractable: true,
  })
  const kid = `${crv}-${run}`
  return {
    secret: { ...(await exportJWK(privateKey)), kid },
    publicJwk: { ...(await exportJWK(publicKey)), kid },
  }
}

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

async function pay(api: ReturnType<typeof served>, tenant: string, callId: string, amount: number) {
  const begun = (await (
    await api(tenant, "ledger:agent", "POST", "/v1/calls", {
      tool: "send_payment",
      args: { amount },
      binding: { agent_id: "pay", policy_version: "1", side_effect_class: "keyed_mutate" },
      meta: { tool_call_id: callId },
    })
  ).json()) as { status: string; request_id: string; fence: number; lease: string }
  expect(begun.status).toBe("run")
  const done = await api(tenant, "ledger:agent", "POST", `/v1/calls/${begun.request_id}/complete`, {
    fence: begun.fence,
    lease: begun.lease,
    result: { charged: amount + 0.5 },
  })
  expect(done.status, await done.clone().text()).toBe(200)
}

describe("worker receipts (LEDGER_RECEIPT_JWK)", () => {
  for (const crv of ["Ed25519", "P-256"] as const)
    it(`${crv}: calls are signed per tenant and an export verifies offline with the public key`, async () => {
      const { secret, publicJwk } = await keyPair(crv)
      const api = served(JSON.stringify(secret))
      const a = `a-${crv}-${run}`
      for (let i = 0; i < 3; i++) await pay(api, a, `call-${i}`, 100 + i)
      const r = await api(a, "ledger:reader", "GET", "/v1/receipts?format=jsonl")
      expect(r.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8")
      // Decoded by hand: workerd warns on .text() of any type that is neither text/* nor +json.
      const receipts = new TextDecoder()
        .decode(await r.arrayBuffer())
        .trim()
        .split("\n")
        .map((l) => parseReceiptJson(l) as Receipt)
      expect(receipts.map((x) => [x.agent_id, x.action, x.status, x.chain?.seq])).toEqual([
        [a, "send_payment", "completed", 0],
        [a, "send_payment", "completed", 1],
        [a, "send_payment", "completed", 2],
      ])
      expect(receipts[0]?.signature.split(".")).toHaveLength(3)
      const offline = await verifyReceipts(
        receipts,
        { jws: jwksVerifier({ keys: [publicJwk] }) },
        { requireChain: true },
      )
      expect(offline).toMatchObject({ ok: true, valid: 3 })
      // Another key pair's public key does not verify them.
      const other = await keyPair(crv)
      expect((await verifyReceipts(receipts, { jws: jwksVerifier({ keys: [other.publicJwk] }) })).ok).toBe(
        false,
      )
      const onServer = await api(a, "ledger:reader", "POST", "/v1/receipts/verify", { require_chain: true })
      expect(await onServer.json()).toMatchObject({ ok: true, valid: 3 })
      // Tenants do not share receipts.
      const b = await api(`b-${crv}-${run}`, "ledger:reader", "GET", "/v1/receipts")
      expect(await b.json()).toEqual({ receipts: [], cursor: null })
    })

  it("a missing, public, kid-less, foreign-curve or unreadable key is 503 misconfigured without the value", async () => {
    const { secret, publicJwk } = await keyPair("Ed25519")
    const { kid: _kid, ...noKid } = secret
    for (const [value, text] of [
      ["{not json", "is not JSON"],
      ["[]", "is not a JWK object"],
      [JSON.stringify(publicJwk), "is not a private key"],
      [JSON.stringify(noKid), "needs a 'kid'"],
      [JSON.stringify({ ...secret, crv: "X25519" }), "Ed25519 (EdDSA) or P-256 (ES256)"],
      [JSON.stringify({ ...secret, alg: "ES256" }), "Ed25519 (EdDSA) or P-256 (ES256)"],
      [JSON.stringify({ ...secret, d: "AAAA" }), "does not import as a signing key"],
    ] as const) {
      const r = await served(value)("t", "ledger:reader", "GET", "/v1/receipts")
      const body = await r.text()
      expect([r.status, JSON.parse(body).error.code, body.includes(text)]).toEqual([
        503,
        "misconfigured",
        true,
      ])
      expect(body).not.toContain(secret.d as string)
    }
  })

  it("without the secret the worker keeps no receipts (404 receipts_not_configured)", async () => {
    const bindings = { ...(env as object), LEDGER_JWT_SECRET: SECRET } as never
    const token = await new SignJWT({ tenant: "t", scope: "ledger:reader" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET))
    const r = await worker.fetch(
      new Request("http://edge.test/v1/receipts", { headers: { authorization: `Bearer ${token}` } }),
      bindings,
      {},
    )
    expect([r.status, ((await r.json()) as { error: { code: string } }).error.code]).toEqual([
      404,
      "receipts_not_configured",
    ])
  })
})

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
    await pay(api, tenant, "c1", 1)
    await pay(api, tenant, "c2", 2)
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

  // The signer's own check refused these with its error type before the key's sign test: a 409 audit_receipt_error
  // that named no variable (it was 503 misconfigured while every build fault was).
  it("a key with no public half, or whose key_ops forbid signing, is 503 misconfigured naming the variable", async () => {
    const { x: _x, ...noX } = await webCryptoP256()
    const verifyOnly = { ...(await webCryptoP256()), key_ops: ["verify"] }
    for (const key of [noX, verifyOnly]) {
      const r = await served(JSON.stringify(key))(`nx-${run}`, "ledger:reader", "GET", "/v1/receipts")
      const body = await r.text()
      expect([r.status, JSON.parse(body).error.code]).toEqual([503, "misconfigured"])
      expect(body).toContain("LEDGER_RECEIPT_JWK")
      expect(body).not.toContain(key.d as string)
    }
  })

  it("a reader asking for another tenant's agent or chain by filter gets none of its receipts", async () => {
    const api = served(JSON.stringify(await webCryptoP256()))
    const victim = `victim-${run}`
    const reader = `reader-${run}`
    await pay(api, victim, "v1", 1)
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
