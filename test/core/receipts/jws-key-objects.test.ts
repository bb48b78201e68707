// Node's KeyObject as a JWS receipt key (Node only: other runtimes have no node:crypto KeyObject to hand over). Its
// algorithm was checked only when jose signed, after the ledgered tool had run.
import { createSecretKey, generateKeyPairSync } from "node:crypto"
import type { JWK } from "jose"
import { describe, expect, it } from "vitest"
import { AuditReceiptError } from "../../../src/core/receipts/index.ts"
import { jwsReceiptSigner } from "../../../src/core/receipts/jws.ts"

describe("a Node KeyObject as the JWS signing key", () => {
  const ed = generateKeyPairSync("ed25519").privateKey
  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey

  it("one of another algorithm, public or secret is refused when the signer is made", () => {
    const wrong: Array<[string, unknown, "EdDSA" | "ES256"]> = [
      ["Ed25519 KeyObject for ES256", ed, "ES256"],
      ["P-256 KeyObject for EdDSA", ec, "EdDSA"],
      ["P-384 KeyObject", generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey, "ES256"],
      ["X25519 KeyObject", generateKeyPairSync("x25519").privateKey, "EdDSA"],
      ["public KeyObject", generateKeyPairSync("ed25519").publicKey, "EdDSA"],
      ["secret KeyObject", createSecretKey(new Uint8Array(32)), "EdDSA"],
    ]
    for (const [what, privateKey, alg] of wrong)
      expect(() => jwsReceiptSigner({ privateKey: privateKey as JWK, alg, kid: "k" }), what).toThrow(
        AuditReceiptError,
      )
  })

  it("the right one signs", async () => {
    for (const [alg, privateKey] of [
      ["EdDSA", ed],
      ["ES256", ec],
    ] as const)
      expect(
        (
          await jwsReceiptSigner({ privateKey: privateKey as unknown as JWK, alg, kid: "k" }).sign("{}")
        ).split("."),
      ).toHaveLength(3)
  })
})
