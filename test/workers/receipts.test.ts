// The worker entry with LEDGER_RECEIPT_JWK, in workerd: a tenant's calls are signed into its own Durable Object,
// its auditor exports them (format=jsonl) and verifies them with the public key alone; another tenant sees none;
// a bad key is a 503 `misconfigured` that never echoes the secret.
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
