// Seconds options that are not numbers a lease can hold. NaN is what `Number(process.env.LEASE_TTL)` gives for an
// unset variable; it compares false with everything, so it used to pass every check and turn into an unbounded
// lease (a crashed worker's row stranded until an operator released it), a poll that never timed out, or a busy poll.

import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerConfigError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const quiet = { onWarning: () => {} }

describe("ActionLedger options", () => {
  for (const [name, value] of [
    ["leaseTtl", Number.NaN],
    ["leaseTtl", Number.POSITIVE_INFINITY],
    ["leaseRenewInterval", Number.NaN],
    ["pollInterval", Number.NaN],
    ["pollInterval", -1],
    ["pollInterval", Number.POSITIVE_INFINITY],
    ["pollTimeout", Number.NaN],
    ["pollTimeout", -5],
    ["presumedDeadAfter", Number.NaN],
  ] as const) {
    it(`${name}: ${value} is refused at construction with invalid_option`, () => {
      const make = () => new ActionLedger({ ...quiet, [name]: value })
      expect(make).toThrow(LedgerConfigError)
      expect(make).toThrow(name)
      try {
        make()
      } catch (e) {
        expect((e as LedgerConfigError).code).toBe("invalid_option")
      }
    })
  }

  it("what the options document still holds: 0 is an unbounded lease, null and Infinity wait forever", async () => {
    const clock = new ManualClock()
    const ledger = new ActionLedger({
      ...quiet,
      clock,
      leaseTtl: 0,
      pollTimeout: Number.POSITIVE_INFINITY,
      presumedDeadAfter: Number.POSITIVE_INFINITY,
    })
    const c = await ledger.claim({ tool: "t", binding, args: {}, requestId: "r1" })
    expect(c.owned).toBe(true)
    expect(c.entry.leaseUntil).toBeNull()
    expect(() => new ActionLedger({ ...quiet, pollTimeout: null, leaseRenewInterval: null })).not.toThrow()
    expect(() => new ActionLedger({ ...quiet, leaseTtl: -1, leaseRenewInterval: 0 })).not.toThrow()
  })

  it("a finite leaseTtl gives a bounded lease (the NaN case used to store leaseUntil null)", async () => {
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ ...quiet, clock, leaseTtl: 60, storage: new MemoryLedgerStorage() })
    const c = await ledger.claim({ tool: "t", binding, args: {}, requestId: "r2" })
    expect(c.entry.leaseUntil).toBe(1060)
  })
})

describe("per-call seconds", () => {
  const ledger = new ActionLedger(quiet)
  for (const [name, value] of [
    ["leaseTtl", Number.NaN],
    ["pollInterval", Number.NaN],
    ["pollTimeout", Number.NaN],
  ] as const) {
    it(`tool({ ${name}: ${value} }) is refused when the tool is made, before any call`, () => {
      expect(() => ledger.tool({ name: "t", binding, [name]: value }, async () => 1)).toThrow(
        LedgerConfigError,
      )
    })
  }

  it("claim({ leaseTtl: NaN }) is refused before anything is written", async () => {
    const storage = new MemoryLedgerStorage()
    const l = new ActionLedger({ ...quiet, storage })
    await expect(
      l.claim({ tool: "t", binding, args: {}, requestId: "r3", leaseTtl: Number.NaN }),
    ).rejects.toThrow(LedgerConfigError)
    expect(storage.size).toBe(0)
  })

  it("renewLease({ leaseTtl: Infinity or NaN }) is refused as a claim's is, and the lease is left as it was", async () => {
    const clock = new ManualClock(1000)
    const l = new ActionLedger({ ...quiet, clock, leaseTtl: 60, storage: new MemoryLedgerStorage() })
    const { entry } = await l.claim({ tool: "t", binding, args: {}, requestId: "r4" })
    for (const leaseTtl of [Number.POSITIVE_INFINITY, Number.NaN]) {
      const renew = l.renewLease("r4", { fence: entry.fence, owner: entry.owner, leaseTtl })
      await expect(renew).rejects.toThrow("leaseTtl must be a finite number of seconds")
    }
    expect((await l.get("r4"))?.leaseUntil).toBe(1060)
    const t = l.tool({ name: "b", binding }, (_: object, tx) => tx.renewLease(Number.POSITIVE_INFINITY))
    await expect(t({}, { toolCallId: "c" })).rejects.toThrow(LedgerConfigError)
  })
})
