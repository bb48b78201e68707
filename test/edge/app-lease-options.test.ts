// createLedgerApp's lease options are checked when the app is built: NaN (an unset env var) answered every begin
// with a 400 that blamed the agent's body, 0 gave every call an unbounded lease, and a maxLeaseTtl of Infinity let an
// agent take a lease that never lapses.
import { describe, expect, it } from "vitest"
import { InvalidOptionError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"

describe("createLedgerApp lease options", () => {
  it("refuses a defaultLeaseTtl or maxLeaseTtl that is not a positive finite number of seconds", () => {
    for (const name of ["defaultLeaseTtl", "maxLeaseTtl"])
      for (const v of [Number.NaN, 0, -1, Number.POSITIVE_INFINITY, "60"])
        expect(
          () => createLedgerApp({ storage: new MemoryLedgerStorage(), [name]: v }),
          `${name}: ${String(v)}`,
        ).toThrow(InvalidOptionError)
  })

  it("takes positive finite ones", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage(), defaultLeaseTtl: 0.5, maxLeaseTtl: 2 })
    const res = await app.request("/v1/calls", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "pay", args: {}, meta: { request_id: "r1" }, lease_ttl: 1e308 }),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ status: "run", lease_ttl: 2 })
  })
})
