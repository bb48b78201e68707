// @vitest-environment edge-runtime
// Vercel's edge runtime (the same VM as `next dev` uses for edge routes): no Node globals at all.
import { describe, expect, it } from "vitest"
import { createPayRoute } from "../../examples/vercel-edge.ts"
import { MemoryLedgerStorage } from "../../src/index.ts"

describe("Vercel edge route", () => {
  it("runs in the edge runtime and charges once per tool call", async () => {
    expect(typeof (globalThis as { EdgeRuntime?: unknown }).EdgeRuntime).toBe("string")
    let charges = 0
    const POST = createPayRoute(new MemoryLedgerStorage(), async () => ({ id: `pi_${++charges}` }))
    const req = () =>
      new Request("https://x/api/pay", {
        method: "POST",
        body: JSON.stringify({ amount: 5, recipient: "a", toolCallId: "c1" }),
      })
    const res = await Promise.all([POST(req()), POST(req()), POST(req())])
    expect(await Promise.all(res.map((r) => r.json()))).toEqual([
      { id: "pi_1" },
      { id: "pi_1" },
      { id: "pi_1" },
    ])
    expect(charges).toBe(1)
    const bad = await POST(new Request("https://x/api/pay", { method: "POST", body: "nope" }))
    expect(bad.status).toBe(400)
  })
})
