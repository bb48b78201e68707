import { beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger, LedgerStaleFenceError } from "../../src/core/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const prefix = `mycelium-test:${runTag("conf")}:action:`

beforeAll(requireUpstash)

testLedgerStorage("upstash (real Redis via the REST server)", () => ({
  storage: new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
  peer: new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
  // The original writes the row and its tombstone together.
  writeRaw: async (id, json) => {
    await upstashClient().eval(
      "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return 1",
      [prefix + id, `${prefix.slice(0, -1)}-tomb:${id}`],
      [json],
    )
  },
}))

describe("upstash: the original's key layout, tombstones and TTL", () => {
  const T0 = 1_800_000_000.5
  const raw = upstashClient()
  const id = (label: string) => `${runTag(label)}-${Math.random().toString(36).slice(2, 8)}`
  const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

  it("stores the row at mycelium:action:{id} and its tombstone at mycelium:action-tomb:{id}", async () => {
    const s = new UpstashLedgerStorage({ redis: upstashClient() })
    const rid = id("layout")
    const r = await s.tryClaimInflight(newEntry({ requestId: rid, tool: "t" }, T0), 60, T0)
    const [row, tomb] = await raw.mget<[unknown, unknown]>(
      `mycelium:action:${rid}`,
      `mycelium:action-tomb:${rid}`,
    )
    expect(row).toEqual(tomb)
    expect(row).toMatchObject({
      request_id: rid,
      fence: 1,
      terminal_outcome: "IN_FLIGHT",
      lease_until: T0 + 60,
    })
    expect(r.entry.fence).toBe(1)
    await raw.del(`mycelium:action:${rid}`, `mycelium:action-tomb:${rid}`)
  })

  it("keeps the in-flight TTL on every in-flight write and drops it once terminal (original §9 #14)", async () => {
    const s = new UpstashLedgerStorage({ redis: upstashClient(), prefix, inFlightTtl: 1000 })
    const ledger = new ActionLedger({ storage: s, leaseTtl: 600 })
    const key = (rid: string) => `${prefix}${rid}`
    const tomb = (rid: string) => `${prefix.slice(0, -1)}-tomb:${rid}`
    const ttls: number[] = []
    let rid = ""
    const tool = ledger.tool({ name: "ttl", binding }, async (_a: { x: number }, tx) => {
      rid = tx.requestId
      ttls.push(await raw.ttl(key(rid)))
      await tx.markMaybeCrossed()
      ttls.push(await raw.ttl(key(rid)))
      await tx.recordExternalOperation("op-1")
      ttls.push(await raw.ttl(key(rid)))
      return 1
    })
    await tool({ x: 1 }, { toolCallId: id("ttl") })
    // max(inFlightTtl, 4 × lease) = 2400 s while in flight, on the claim and on each later write.
    for (const t of ttls) expect(t).toBeGreaterThan(2300)
    expect(await raw.ttl(key(rid))).toBe(-1)
    expect(await raw.ttl(tomb(rid))).toBe(-1)
  })

  it("rebuilds from the tombstone when the row's key is gone: terminal as-is, in-flight as an EXPIRED ghost", async () => {
    const s = new UpstashLedgerStorage({ redis: upstashClient(), prefix, now: () => T0 })
    const live = id("ghost")
    await s.tryClaimInflight(newEntry({ requestId: live, tool: "t" }, T0), 600, T0)
    await raw.del(`${prefix}${live}`)
    const ghost = await s.get(live)
    expect(ghost).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: 1, leaseUntil: T0 - 1 })
    // An evicted claim never looks like "never claimed": the reclaim bumps the fence past the tombstone's.
    const re = await s.tryClaimInflight(newEntry({ requestId: live, tool: "t", owner: "w2" }, T0), 60, T0)
    expect(re).toMatchObject({ outcome: "claimed", entry: { fence: 2, owner: "w2" } })
    expect(await s.get(live)).toEqual(re.entry)

    const done = id("done")
    const e = newEntry(
      { requestId: done, tool: "t", terminalOutcome: "COMPLETED", status: "completed", fence: 3 },
      T0,
    )
    await s.set(e)
    await raw.del(`${prefix}${done}`)
    expect(await s.get(done)).toEqual(e)
    const again = await s.tryClaimInflight(newEntry({ requestId: done, tool: "t" }, T0), 60, T0)
    expect(again).toMatchObject({ outcome: "completed", entry: e })
    // Tombstone-only rows are listed too.
    const listed = []
    for await (const x of s.list({ prefix: done })) listed.push(x)
    expect(listed).toEqual([e])
  })

  it("set() never moves the fence backwards", async () => {
    const s = new UpstashLedgerStorage({ redis: upstashClient(), prefix })
    const rid = id("fence")
    await s.set(newEntry({ requestId: rid, tool: "t", fence: 5 }, T0))
    await expect(s.set(newEntry({ requestId: rid, tool: "t", fence: 4 }, T0))).rejects.toBeInstanceOf(
      LedgerStaleFenceError,
    )
    expect((await s.get(rid))?.fence).toBe(5)
    await s.set(newEntry({ requestId: rid, tool: "t", fence: 5, result: "same fence is fine" }, T0))
    expect((await s.get(rid))?.result).toBe("same fence is fine")
  })
})
