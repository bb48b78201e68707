import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { exportJWK, generateKeyPair } from "jose"
import { describe, expect, it, onTestFinished } from "vitest"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  receiptJsonLine,
  receiptPayloadText,
  recordOf,
  verifyReceipt,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"
import { jwksVerifier, jwsReceiptSigner } from "../../../src/core/receipts/jws.ts"

const vectors = JSON.parse(
  readFileSync(new URL("../../fixtures/python-vectors.json", import.meta.url), "utf8"),
)
const KEY: string = vectors.receipts_hmac.signing_key
const pyReceipts: Array<{ record: AuditReceiptRecord; canonical_payload: string }> =
  vectors.receipts_hmac.receipts

function emitter(store = new MemoryReceiptStore(), key = KEY, chain?: string | false) {
  let t = 1_767_225_600
  return new ReceiptEmitter({
    signer: hmacReceiptSigner(key),
    store,
    agentId: "payment-agent",
    ...(chain === undefined ? {} : { chain }),
    now: () => t++,
  })
}

async function chainOf(n: number): Promise<Receipt[]> {
  const e = emitter()
  for (let i = 0; i < n; i++)
    await e.emit({
      action: "send_payment",
      actionKind: "tool",
      requestId: `req-${i}`,
      kwargs: { amount: 100 + i, recipient: "acct_123" },
      outputs: { charge_id: `ch_${i}` },
      status: "completed",
    })
  return e.store.list()
}

const without = <T>(xs: readonly T[], at: number, insert?: T): T[] => {
  const out = [...xs]
  if (insert === undefined) out.splice(at, 1)
  else out.splice(at, 0, insert)
  return out
}

const reasons = (v: { failures: Array<{ index: number; reason: string }> }) =>
  v.failures.map((f) => `${f.index}:${f.reason}`)

describe("HMAC receipts match the Python original", () => {
  it("the signed payload text is the original's canonical JSON, byte for byte", () => {
    for (const { record, canonical_payload } of pyReceipts)
      expect(receiptPayloadText(record)).toBe(canonical_payload)
  })

  it("receipts signed by the original verify; a wrong key or one edited field does not", async () => {
    for (const { record } of pyReceipts) {
      expect(await verifyReceipt(record, { hmac: KEY })).toBe(true)
      expect(await verifyReceipt(record, { hmac: "other-key" })).toBe(false)
      expect(await verifyReceipt({ ...record, request_id: `${record.request_id}x` }, { hmac: KEY })).toBe(
        false,
      )
    }
    const v = await verifyReceipts(
      pyReceipts.map((r) => r.record),
      { hmac: KEY },
    )
    expect(v).toEqual({ ok: true, valid: 3, failures: [] })
  })

  it("a receipt whose keys hold astral characters and lone surrogates verifies (keys sorted by code point)", async () => {
    // sign_payload(record.payload(), key) in the original, run on 2026-12-04, on this record as json.loads reads it.
    const record = {
      receipt_id: "rcpt-keys",
      agent_id: "interop",
      action: "send_payment",
      action_kind: "tool",
      request_id: "r1",
      inputs: { args: [], kwargs: { "\ufeff": 1, "\ud800": 2, "\ue000": 3, "\u{1F600}": 4 } },
      outputs: { "\ue000": 1.5, "\u{1F600}": [true, null] },
      status: "completed",
      timestamp: 1767225600.5,
      error: null,
      signature: "e6ae8641f5d94172ece7d0fda7e5a38e4d51db6ff74fe70014b0f45dfb3b7b8d",
    } as AuditReceiptRecord
    expect(await verifyReceipt(record, { hmac: "interop-receipt-key" })).toBe(true)
  })

  it("receipts signed here verify with the original's verify_receipt (python3)", async () => {
    const receipts = await chainOf(3)
    const e = emitter()
    receipts.push(
      await e.emit({
        action: "nightly_report",
        actionKind: "task",
        requestId: "T-42",
        kwargs: { day: "2026-12-01", note: "café ☕ 𝄞" },
        outputs: { n: [1, 2.5, -0, 1e21, 1e-7] },
        status: "failed",
        error: "RuntimeError: gateway timeout",
      }),
    )
    const dir = mkdtempSync(join(tmpdir(), "rcpt-py-"))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "receipts.jsonl")
    writeFileSync(file, `${receipts.map((r) => receiptJsonLine(recordOf(r))).join("\n")}\n`)
    const script = new URL("../../../scripts/python/verify_receipt.py", import.meta.url).pathname
    const run = (path: string) =>
      execFileSync("python3", [script, path], {
        env: { ...process.env, MYCELIUM_RECEIPT_KEY: KEY },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      })
    const out = run(file)
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
    expect(out.map((o) => o.valid)).toEqual([true, true, true, true])
    // The script really checks: a flipped byte in one record makes it fail.
    const tampered = readFileSync(file, "utf8").replace('"amount": 101', '"amount": 109')
    writeFileSync(file, tampered)
    expect(() => run(file)).toThrow()
  })
})

describe("verifyReceipts detects tampering", () => {
  it("an intact chain verifies", async () => {
    const receipts = await chainOf(5)
    expect(receipts.map((r) => r.chain?.seq)).toEqual([0, 1, 2, 3, 4])
    expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toEqual({
      ok: true,
      valid: 5,
      failures: [],
    })
  })

  it("one flipped byte", async () => {
    const receipts = await chainOf(4)
    const r = receipts[2] as Receipt
    receipts[2] = { ...r, outputs: { charge_id: "ch_3" } }
    const v = await verifyReceipts(receipts, { hmac: KEY })
    expect(reasons(v)).toEqual(["2:bad_signature", "2:bad_link"])
  })

  it("a deleted receipt (middle, first, and the tail against a known head)", async () => {
    const receipts = await chainOf(5)
    expect(reasons(await verifyReceipts(without(receipts, 2), { hmac: KEY }))).toEqual(["2:gap"])
    expect(reasons(await verifyReceipts(receipts.slice(1), { hmac: KEY }))).toEqual(["0:gap"])
    const last = receipts[4]?.chain
    const heads = { "payment-agent": { seq: last?.seq ?? -1, digest: last?.digest ?? "" } }
    expect(reasons(await verifyReceipts(receipts.slice(0, 4), { hmac: KEY }, { heads }))).toEqual([
      "3:truncated",
    ])
  })

  it("two swapped receipts", async () => {
    const receipts = await chainOf(5)
    const swapped = [...receipts]
    ;[swapped[1], swapped[3]] = [swapped[3] as Receipt, swapped[1] as Receipt]
    expect(reasons(await verifyReceipts(swapped, { hmac: KEY }))).toEqual(["2:reorder", "3:reorder"])
  })

  it("an inserted forged receipt: signed without the key, or validly signed on a second chain head", async () => {
    const receipts = await chainOf(4)
    const forger = emitter(new MemoryReceiptStore(), "not-the-key")
    const forged = await forger.emit({
      action: "send_payment",
      actionKind: "tool",
      requestId: "x",
      status: "completed",
    })
    const v = await verifyReceipts(without(receipts, 2, forged), { hmac: KEY })
    expect(reasons(v)).toEqual(["2:bad_signature", "2:bad_link", "2:reorder", "2:fork"])
    // A holder of the key who writes from a second copy of the chain forks it: detected too.
    const other = await chainOf(3)
    const fork = await verifyReceipts([...receipts, other[2] as Receipt], { hmac: KEY })
    expect(reasons(fork)).toEqual(["4:reorder", "4:fork"])
  })

  it("garbage never throws", async () => {
    const v = await verifyReceipts([null, 7, { receipt_id: "r" }], { hmac: KEY })
    expect(v.failures.map((f) => f.reason)).toEqual(["bad_shape", "bad_shape", "bad_shape"])
    expect(v.valid).toBe(0)
  })
})

describe("JWS receipts", () => {
  for (const alg of ["EdDSA", "ES256"] as const) {
    it(`${alg}: verify with the public JWKS only; another key fails`, async () => {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
      const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg }
      const e = new ReceiptEmitter({
        signer: jwsReceiptSigner({ privateKey, alg, kid: "k1" }),
        store: new MemoryReceiptStore(),
        agentId: "a",
      })
      for (let i = 0; i < 3; i++)
        await e.emit({ action: "t", actionKind: "task", requestId: `r${i}`, outputs: i, status: "completed" })
      const receipts = await e.store.list()
      expect(receipts[0]?.signature.split(".")).toHaveLength(3)
      expect(
        await verifyReceipts(receipts, { jws: jwksVerifier({ keys: [jwk] }) }, { requireChain: true }),
      ).toMatchObject({
        ok: true,
        valid: 3,
      })
      const other = await generateKeyPair(alg, { extractable: true })
      const wrong = { ...(await exportJWK(other.publicKey)), kid: "k1", alg }
      const v = await verifyReceipts(receipts, { jws: jwksVerifier({ keys: [wrong] }) })
      expect(v.valid).toBe(0)
      // An HMAC key cannot stand in for a JWS signature.
      expect((await verifyReceipts(receipts, { hmac: KEY })).valid).toBe(0)
    })
  }
})

describe("canonical JSON of -0.0 (the original's transition-key vector)", () => {
  it("a float negative zero is written as Python writes it", async () => {
    const { canonicalJson, transitionKey, argsFingerprint } = await import("../../../src/core/index.ts")
    const tk = vectors.transition_keys
    const c = tk.cases.find((x: { name: string }) => x.name === "negative zero in a list")
    const args = JSON.parse(c.args_json)
    expect(canonicalJson(args)).toBe('{"xs":[1.5,-0.0,0]}')
    const binding = {
      agentId: tk.binding.agent_id,
      policyVersion: tk.binding.policy_version,
      sideEffectClass: tk.binding.side_effect_class,
    }
    expect(
      transitionKey({
        tool: tk.tool,
        binding,
        argsFingerprint: argsFingerprint(args),
        dispatchId: tk.tool_call_id,
      }),
    ).toBe(c.key)
  })
})

describe("HMAC-SHA256 on the synchronous digest", () => {
  it("equals Web Crypto's for short, long and non-ASCII keys and messages", async () => {
    const { hmacSha256HexSync } = await import("../../../src/core/receipts/index.ts")
    const enc = new TextEncoder()
    const keys = ["k", "receipt-test-key-é", "x".repeat(64), "y".repeat(65), "z".repeat(200)]
    const msgs = ["", "a", "café ☕ 𝄞", "m".repeat(55), "m".repeat(64), "m".repeat(1000)]
    for (const k of keys) {
      const key = await crypto.subtle.importKey(
        "raw",
        enc.encode(k),
        { name: "HMAC", hash: "SHA-256" },
        false,
        ["sign"],
      )
      for (const m of msgs) {
        const expected = Buffer.from(await crypto.subtle.sign("HMAC", key, enc.encode(m))).toString("hex")
        expect(hmacSha256HexSync(k, m)).toBe(expected)
      }
    }
  })
})
