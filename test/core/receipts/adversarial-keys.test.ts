// Adversarial review of keys and algorithms: JWS header tricks, key confusion, signature encodings.
import { CompactSign, exportJWK, generateKeyPair, type JWK } from "jose"
import { describe, expect, it } from "vitest"
import {
  AuditReceiptError,
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  type ReceiptSigner,
  receiptPayloadText,
  recordOf,
  verifyReceipt,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"
import { jwksVerifier, jwsReceiptSigner } from "../../../src/core/receipts/jws.ts"

const KEY = "adversarial-keys-key"
const enc = new TextEncoder()
const b64u = (s: string) => btoa(s).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "")

async function receiptsOf(signer: ReceiptSigner, n = 2, chain?: false): Promise<Receipt[]> {
  const store = new MemoryReceiptStore()
  const e = new ReceiptEmitter({ signer, store, agentId: "a", ...(chain === false ? { chain } : {}) })
  for (let i = 0; i < n; i++)
    await e.emit({
      action: "pay",
      actionKind: "tool",
      requestId: `r${i}`,
      outputs: { n: i },
      status: "completed",
    })
  return store.list()
}

async function ed25519(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { extractable: true })
  const pub: JWK = { ...(await exportJWK(publicKey)), kid, alg: "EdDSA" }
  return { privateKey, pub }
}

/** Re-signs a receipt's record with a JWS of the given header and key, as an attacker without the real key would. */
async function resigned(
  r: Receipt,
  header: Record<string, unknown>,
  key: CryptoKey | Uint8Array,
): Promise<Receipt> {
  const record = recordOf(r)
  const jws = await new CompactSign(enc.encode(receiptPayloadText(record)))
    .setProtectedHeader(header as never)
    .sign(key)
  return { ...record, signature: jws }
}

/** A compact JWS built by hand (jose refuses to sign unknown crit headers). */
async function rawJws(header: object, text: string, key: CryptoKey, b64 = true): Promise<string> {
  const input = `${b64u(JSON.stringify(header))}.${b64 ? b64u(text) : text}`
  const sig = new Uint8Array(await crypto.subtle.sign("Ed25519", key, enc.encode(input)))
  return `${input}.${b64u(String.fromCharCode(...sig))}`
}

describe("JWS headers and key confusion", () => {
  it("alg none, an HMAC made with the public key, a kid naming another key, and crit headers all fail", async () => {
    const real = await ed25519("real")
    const attacker = await ed25519("attacker")
    const [r] = await receiptsOf(
      jwsReceiptSigner({ privateKey: real.privateKey, alg: "EdDSA", kid: "real" }),
      1,
    )
    const receipt = r as Receipt
    const jwks = jwksVerifier({ keys: [real.pub] })
    expect(await verifyReceipt(receipt, { jws: jwks })).toBe(true)
    const text = receiptPayloadText(recordOf(receipt))
    // Unsecured JWS, with and without a third part.
    for (const signature of [
      `${b64u('{"alg":"none","kid":"real"}')}.${b64u(text)}.`,
      `${b64u('{"alg":"none","kid":"real"}')}.${b64u(text)}.AAAA`,
    ])
      expect(await verifyReceipt({ ...recordOf(receipt), signature }, { jws: jwks })).toBe(false)
    // HS256 keyed with what every verifier has: the public key's bytes (HS/EdDSA confusion).
    for (const secret of [JSON.stringify(real.pub), real.pub.x as string])
      expect(
        await verifyReceipt(await resigned(receipt, { alg: "HS256", kid: "real" }, enc.encode(secret)), {
          jws: jwks,
        }),
      ).toBe(false)
    // The attacker's key under the real key's kid, and under its own kid (not in the JWKS).
    expect(
      await verifyReceipt(await resigned(receipt, { alg: "EdDSA", kid: "real" }, attacker.privateKey), {
        jws: jwks,
      }),
    ).toBe(false)
    expect(
      await verifyReceipt(await resigned(receipt, { alg: "EdDSA", kid: "attacker" }, attacker.privateKey), {
        jws: jwks,
      }),
    ).toBe(false)
    // An embedded jwk header naming the attacker's key is ignored: the JWKS alone picks keys.
    const embedded = await resigned(receipt, { alg: "EdDSA", jwk: attacker.pub }, attacker.privateKey)
    expect(await verifyReceipt(embedded, { jws: jwks })).toBe(false)
    // A crit extension the verifier does not know, signed by the real key, is refused.
    const crit = await rawJws(
      { alg: "EdDSA", kid: "real", crit: ["exp-x"], "exp-x": 1 },
      text,
      real.privateKey,
    )
    expect(await verifyReceipt({ ...recordOf(receipt), signature: crit }, { jws: jwks })).toBe(false)
    // The same construction with a receipt's header verifies: the refusal above is the crit header's.
    const header = { alg: "EdDSA", kid: "real", typ: "mycelium-receipt+jws" }
    const plain = await rawJws(header, text, real.privateKey)
    expect(await verifyReceipt({ ...recordOf(receipt), signature: plain }, { jws: jwks })).toBe(true)
    // The real key signing the same text for another purpose (a JWT, no typ) is not a receipt signature.
    for (const typ of ["JWT", undefined]) {
      const other = await rawJws(
        { alg: "EdDSA", kid: "real", ...(typ ? { typ } : {}) },
        text,
        real.privateKey,
      )
      expect(await verifyReceipt({ ...recordOf(receipt), signature: other }, { jws: jwks })).toBe(false)
    }
    // Unencoded payload (b64: false, RFC 7797): its compact form is not three base64url parts.
    const unencoded = await rawJws(
      { alg: "EdDSA", kid: "real", b64: false, crit: ["b64"] },
      text,
      real.privateKey,
      false,
    )
    expect(await verifyReceipt({ ...recordOf(receipt), signature: unencoded }, { jws: jwks })).toBe(false)
    // The real key over another text (a JWS lifted from a different receipt) fails on the payload check.
    const [other] = await receiptsOf(
      jwsReceiptSigner({ privateKey: real.privateKey, alg: "EdDSA", kid: "real" }),
      1,
    )
    expect(
      await verifyReceipt({ ...recordOf(receipt), signature: (other as Receipt).signature }, { jws: jwks }),
    ).toBe(false)
  })

  it("an HMAC receipt does not verify with JWS keys only, nor a JWS one with HMAC keys only", async () => {
    const real = await ed25519("k")
    const hmac = await receiptsOf(hmacReceiptSigner(KEY))
    const jws = await receiptsOf(jwsReceiptSigner({ privateKey: real.privateKey, alg: "EdDSA", kid: "k" }))
    expect((await verifyReceipts(hmac, { jws: jwksVerifier({ keys: [real.pub] }) })).valid).toBe(0)
    expect((await verifyReceipts(jws, { hmac: KEY })).valid).toBe(0)
    // Both kinds in one list, each with its own key: all verify.
    const both = await verifyReceipts([...hmac.map(recordOf), ...jws.map(recordOf)], {
      hmac: KEY,
      jws: jwksVerifier({ keys: [real.pub] }),
    })
    expect(both.ok).toBe(true)
  })
})

describe("signature encodings", () => {
  it("HMAC: only the original's lowercase hex verifies (Python's compare_digest is as strict)", async () => {
    const [r] = await receiptsOf(hmacReceiptSigner(KEY), 1, false)
    const sig = (r as Receipt).signature
    expect(await verifyReceipt(r as Receipt, { hmac: KEY })).toBe(true)
    const bytes = sig.match(/../g)?.map((h) => Number.parseInt(h, 16)) ?? []
    const b64 = btoa(String.fromCharCode(...bytes))
    for (const variant of [
      sig.toUpperCase(),
      ` ${sig}`,
      `${sig}\n`,
      `0x${sig}`,
      sig.slice(0, 63),
      b64,
      b64u(b64),
    ])
      expect(await verifyReceipt({ ...(r as Receipt), signature: variant }, { hmac: KEY })).toBe(false)
  })

  it("JWS: padding and other encodings of the same signature do not verify", async () => {
    const real = await ed25519("k")
    const [r] = await receiptsOf(
      jwsReceiptSigner({ privateKey: real.privateKey, alg: "EdDSA", kid: "k" }),
      1,
      false,
    )
    const sig = (r as Receipt).signature
    const jwks = jwksVerifier({ keys: [real.pub] })
    const [h, p, s] = sig.split(".") as [string, string, string]
    const std = s.replaceAll("-", "+").replaceAll("_", "/")
    // One signature in about 15 has no '-' or '_', so its standard-alphabet spelling is the signature itself.
    const variants = [`${sig}==`, `${h}.${p}.${std}`, `${h}.${p}.${s}=`, `${h}.${p}=.${s}`, ` ${sig}`]
    for (const variant of variants.filter((v) => v !== sig))
      expect(await verifyReceipt({ ...(r as Receipt), signature: variant }, { jws: jwks })).toBe(false)
  })

  it("JWS: the unused low bits of the signature's last character are not a second spelling", async () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for (const alg of ["EdDSA", "ES256"] as const) {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
      const jwks = jwksVerifier({ keys: [{ ...(await exportJWK(publicKey)), kid: "k", alg }] })
      const rs = await receiptsOf(jwsReceiptSigner({ privateKey, alg, kid: "k" }), 1, false)
      const r = rs[0] as Receipt
      expect(await verifyReceipt(r, { jws: jwks })).toBe(true)
      // 64 signature bytes are 86 characters: the last carries 4 bits, so 4 characters decode alike.
      const last = alphabet.indexOf(r.signature.at(-1) as string)
      const base = last - (last % 4)
      for (let d = 0; d < 4; d++) {
        if (base + d === last) continue
        const signature = `${r.signature.slice(0, -1)}${alphabet[base + d]}`
        expect(await verifyReceipt({ ...r, signature }, { jws: jwks })).toBe(false)
      }
    }
  })
})

describe("JWS signing keys of the wrong kind", () => {
  it("a public key, the other algorithm's key, a secret or no key is refused when the signer is made", async () => {
    const ed = await generateKeyPair("EdDSA", { extractable: true })
    const es = await generateKeyPair("ES256", { extractable: true })
    const hmac = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, true, ["sign"])
    const wrong: Array<[string, unknown, "EdDSA" | "ES256"]> = [
      ["public CryptoKey", ed.publicKey, "EdDSA"],
      ["Ed25519 key for ES256", ed.privateKey, "ES256"],
      ["P-256 key for EdDSA", es.privateKey, "EdDSA"],
      ["HMAC CryptoKey", hmac, "EdDSA"],
      ["public JWK", await exportJWK(ed.publicKey), "EdDSA"],
      ["P-256 JWK for EdDSA", await exportJWK(es.privateKey), "EdDSA"],
      ["oct JWK", { kty: "oct", k: "c2VjcmV0" }, "EdDSA"],
      ["an unset variable", undefined, "EdDSA"],
      ["a string", "secret", "ES256"],
    ]
    // Taken before, each of these failed only at the first sign(): through a ledger, after the tool had run, and for
    // every call after it (the outcome recorded without its receipt).
    for (const [what, privateKey, alg] of wrong)
      expect(() => jwsReceiptSigner({ privateKey: privateKey as JWK, alg, kid: "k" }), what).toThrow(
        AuditReceiptError,
      )
    // The right keys, as CryptoKeys and as private JWKs, still sign.
    for (const [alg, pair] of [
      ["EdDSA", ed],
      ["ES256", es],
    ] as const)
      for (const privateKey of [pair.privateKey, await exportJWK(pair.privateKey)]) {
        const jws = await jwsReceiptSigner({ privateKey, alg, kid: "k" }).sign("{}")
        const jwks = jwksVerifier({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k", alg }] })
        expect(await jwks(jws, "{}")).toBe(true)
      }
  })
})

describe("JWS signing keys that fail only when imported", () => {
  it("a JWK Web Crypto cannot import is refused when made", async () => {
    const jwk = await exportJWK((await generateKeyPair("EdDSA", { extractable: true })).privateKey)
    const wrong: Array<[string, JWK]> = [
      ["empty d", { ...jwk, d: "" }],
      ["d not base64url", { ...jwk, d: "!!!" }],
      ["no x", { kty: "OKP", crv: "Ed25519", d: jwk.d } as JWK],
      ["key_ops without sign", { ...jwk, key_ops: ["verify"] }],
    ]
    // Each was taken and failed at every sign(), after the ledgered tool had run.
    for (const [what, privateKey] of wrong)
      expect(() => jwsReceiptSigner({ privateKey, alg: "EdDSA", kid: "k" }), what).toThrow(AuditReceiptError)
    const extra = { ...jwk, kid: "k1", alg: "EdDSA", use: "sig", key_ops: ["sign"], ext: true }
    expect(
      (await jwsReceiptSigner({ privateKey: extra, alg: "EdDSA", kid: "k" }).sign("{}")).split("."),
    ).toHaveLength(3)
  })
})
