// jwsReceiptSigner in workerd: every private key form jose signs with is taken when made and signs, and a key that
// cannot sign (public, another algorithm) is refused when made, not at the first receipt after a tool ran.
import { exportJWK, exportPKCS8, generateKeyPair, importJWK, importPKCS8 } from "jose"
import { describe, expect, it } from "vitest"
import { AuditReceiptError } from "../../src/core/receipts/index.ts"
import { jwsReceiptSigner, type ReceiptJwsAlgorithm } from "../../src/core/receipts/jws.ts"

const subtle = crypto.subtle
const made = (alg: ReceiptJwsAlgorithm, key: unknown) =>
  jwsReceiptSigner({ alg, kid: "k", privateKey: key as CryptoKey })

describe.each([
  ["EdDSA", { name: "Ed25519" }],
  ["ES256", { name: "ECDSA", namedCurve: "P-256" }],
] as const)("%s keys in workerd", (alg, algorithm) => {
  it("every private form is taken and signs", async () => {
    const pair = (await subtle.generateKey(algorithm, true, ["sign", "verify"])) as CryptoKeyPair
    const fixed = (await subtle.generateKey(algorithm, false, ["sign", "verify"])) as CryptoKeyPair
    const jwk = await exportJWK(pair.privateKey)
    const pem = await exportPKCS8(pair.privateKey)
    const forms: unknown[] = [
      pair.privateKey,
      fixed.privateKey,
      (await generateKeyPair(alg)).privateKey,
      jwk,
      { ...jwk, kid: "k1", alg, use: "sig", key_ops: ["sign"], ext: true },
      await importJWK(jwk, alg),
      await importPKCS8(pem, alg),
    ]
    for (const key of forms) expect((await made(alg, key).sign("text")).split(".")).toHaveLength(3)
  })

  it("a public key or the other algorithm's is refused when made", async () => {
    const other = alg === "EdDSA" ? "ES256" : "EdDSA"
    const pair = await generateKeyPair(alg, { extractable: true })
    for (const key of [
      pair.publicKey,
      await exportJWK(pair.publicKey),
      (await generateKeyPair(other)).privateKey,
    ])
      expect(() => made(alg, key)).toThrow(AuditReceiptError)
  })
})

describe("node:crypto KeyObjects in workerd (nodejs_compat)", () => {
  it("a private key of the algorithm signs; another algorithm's is refused when made", async () => {
    // Typed here: the workers project has no Node declarations.
    const nodeCrypto = "node:crypto"
    const { generateKeyPairSync } = (await import(/* @vite-ignore */ nodeCrypto)) as {
      generateKeyPairSync(type: string, options?: object): { privateKey: object }
    }
    const ed = generateKeyPairSync("ed25519").privateKey
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey
    expect((await made("EdDSA", ed).sign("text")).split(".")).toHaveLength(3)
    expect((await made("ES256", ec).sign("text")).split(".")).toHaveLength(3)
    expect(() => made("ES256", ed)).toThrow(AuditReceiptError)
    expect(() => made("EdDSA", ec)).toThrow(AuditReceiptError)
  })
})
