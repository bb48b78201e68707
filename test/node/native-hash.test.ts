// `mycelium-runtime/node` swaps in node:crypto's SHA-256; keys must not change by a single bit.
import { describe, expect, it } from "vitest"
import { sha256HexJs } from "../../src/adapter-kit.ts"
import { argsFingerprint, sha256Hex, transitionKey } from "../../src/core/index.ts"
import "../../src/node.ts"

describe("native SHA-256", () => {
  it("is in use and agrees with the JavaScript digest", () => {
    const inputs = ["", "abc", "é🙂".repeat(40), "x".repeat(1000), new Uint8Array([0, 1, 2, 255])]
    for (const s of inputs) expect(sha256Hex(s)).toBe(sha256HexJs(s))
    const fp = argsFingerprint({ amount: 10, tool_call_id: "tc-1" })
    expect(fp).toBe("55d87e91c28ae8881dfb5ce0d9256f8b753486302dc073530b63edf6fe55384e")
    const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } as const
    expect(transitionKey({ tool: "charge", binding, argsFingerprint: fp, dispatchId: "tc-1" })).toBe(
      "3e29769d8451d1efa98a29cdb2cfcb3bea4a2da946fdfc14c7d8db2697226cec",
    )
  })
})
