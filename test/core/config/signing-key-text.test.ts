// mycelium.yaml's signing key, written in the file or named by signing_key_env, holding an unpaired surrogate: UTF-8
// would sign with U+FFFD (another key), and Python's signing_key.encode() refuses it. Refused when the file loads.
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"

const quiet = { onWarning: () => {} }
const T = "transition:\n  agent_id: a\n  policy_version: v1\n"

const refusal = (yaml: string, env: Record<string, string> = {}): ConfigError => {
  try {
    loadConfigFromString(yaml, { ...quiet, env })
  } catch (e) {
    return e as ConfigError
  }
  throw new Error("loaded")
}

describe("a signing key holding an unpaired surrogate", () => {
  it("written in the file (a YAML escape) is a ConfigError at audit_receipt.signing_key", () => {
    const e = refusal(`${T}audit_receipt:\n  signing_key: "key-\\ud800"\n`)
    expect(e).toBeInstanceOf(ConfigError)
    expect(e.code).toBe("config_invalid")
    expect(e.path).toEqual(["audit_receipt", "signing_key"])
    expect(e.message).toContain("unpaired surrogate")
  })

  it("read from signing_key_env is a ConfigError at audit_receipt.signing_key_env, never echoing the key", () => {
    const e = refusal(`${T}audit_receipt:\n  signing_key_env: RECEIPT_KEY\n`, {
      RECEIPT_KEY: "s3cret-\udc00",
    })
    expect(e).toBeInstanceOf(ConfigError)
    expect(e.path).toEqual(["audit_receipt", "signing_key_env"])
    expect(e.message).not.toContain("s3cret")
  })

  it("a key in valid Unicode (U+FFFD itself, an emoji) loads", () => {
    for (const key of ["key-\ufffd", "key-\ud83d\ude00"])
      expect(
        loadConfigFromString(`${T}audit_receipt:\n  signing_key_env: K\n`, { ...quiet, env: { K: key } })
          .resolved.signingKey,
      ).toBe(key)
  })
})
