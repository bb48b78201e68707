// Redis and Upstash: two ledgers under the prefixes `…-a` and `…-b` on one Redis share no key. Before, derived keys
// dropped the prefix's last character, so both wrote tombstones to `…--tomb:{id}` and dispatch sets to
// `…--dispatch:{id}`: tenant B's call replayed tenant A's result (B never paid), and B's call_1 with other arguments
// was refused as args drift against A's row.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { LedgerStorage } from "../../src/adapter-kit.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const tag = runTag("pfxiso")
const raw = upstashClient()
const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

async function keysMatching(match: string): Promise<string[]> {
  const out: string[] = []
  let cursor: string | number = "0"
  do {
    const [next, keys]: [string | number, string[]] = await raw.scan(cursor, { match, count: 500 })
    out.push(...keys.map(String))
    cursor = next
  } while (String(cursor) !== "0")
  return out
}

beforeAll(requireUpstash)
afterAll(async () => {
  const left = await keysMatching(`*${tag}*`)
  if (left.length) await raw.del(...left)
})

const stores: Array<[string, (prefix: string) => LedgerStorage & { close?: () => unknown }]> = [
  ["upstash", (prefix) => new UpstashLedgerStorage({ redis: upstashClient(), prefix })],
  ["redis", (prefix) => new RedisLedgerStorage({ url: REDIS_URL, prefix })],
]

describe.each(stores)("%s: ledgers under prefixes '…-a' and '…-b' are independent", (name, open) => {
  const opened: Array<{ close?: () => unknown }> = []
  afterAll(() => Promise.all(opened.map((s) => s.close?.())))
  const tenant = (prefix: string, who: string) => {
    const storage = open(prefix)
    opened.push(storage)
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const runs: number[] = []
    const pay = ledger.tool({ name: "send_payment", binding }, async (a: { amount: number }) => {
      runs.push(a.amount)
      return { paidBy: who, amount: a.amount }
    })
    return { storage, ledger, pay, runs, prefix }
  }
  /** Drops every row key of the ledger: the eviction that leaves only the tombstones. */
  const evictRows = async (prefix: string, storage: LedgerStorage) => {
    for await (const e of storage.list()) await raw.del(`${prefix}${e.requestId}`)
  }

  it("the same request pays once in each, also when only the tombstones are left", async () => {
    const a = tenant(`${tag}-${name}-t-a`, "A")
    const b = tenant(`${tag}-${name}-t-b`, "B")
    expect(await a.pay({ amount: 100 }, { toolCallId: "call_1" })).toEqual({ paidBy: "A", amount: 100 })
    await evictRows(a.prefix, a.storage)
    expect(await b.pay({ amount: 100 }, { toolCallId: "call_1" })).toEqual({ paidBy: "B", amount: 100 })
    await evictRows(b.prefix, b.storage)
    // Each replays its own result from its own tombstone.
    expect(await a.pay({ amount: 100 }, { toolCallId: "call_1" })).toEqual({ paidBy: "A", amount: 100 })
    expect(await b.pay({ amount: 100 }, { toolCallId: "call_1" })).toEqual({ paidBy: "B", amount: 100 })
    expect([a.runs, b.runs]).toEqual([[100], [100]])
    // A call only A made is not in B's list.
    await a.pay({ amount: 5 }, { toolCallId: "only-a" })
    const listed = async (s: LedgerStorage) => {
      const out: unknown[] = []
      for await (const e of s.list()) out.push(e.result)
      return out
    }
    expect(await listed(b.storage)).toEqual([{ paidBy: "B", amount: 100 }])
    expect(await listed(a.storage)).toHaveLength(2)
  })

  it("prefixes '…X~a:' and '…Xa' share no tombstone: B's first call runs, and each replays its own", async () => {
    // Before, both derived `…X~a-`: B found A's tombstone and replayed A's payment without paying.
    const a = tenant(`${tag}-${name}-X~a:`, "A")
    const b = tenant(`${tag}-${name}-Xa`, "B")
    expect(await a.pay({ amount: 5 }, { requestId: "order-1" })).toEqual({ paidBy: "A", amount: 5 })
    expect(await b.pay({ amount: 5 }, { requestId: "order-1" })).toEqual({ paidBy: "B", amount: 5 })
    await evictRows(a.prefix, a.storage)
    await evictRows(b.prefix, b.storage)
    expect(await a.pay({ amount: 5 }, { requestId: "order-1" })).toEqual({ paidBy: "A", amount: 5 })
    expect(await b.pay({ amount: 5 }, { requestId: "order-1" })).toEqual({ paidBy: "B", amount: 5 })
    expect([a.runs, b.runs]).toEqual([[5], [5]])
  })

  it("the same tool-call id with other arguments in B is not refused because of A", async () => {
    const a = tenant(`${tag}-${name}-d-a`, "A")
    const b = tenant(`${tag}-${name}-d-b`, "B")
    expect(await a.pay({ amount: 100 }, { toolCallId: "call_1" })).toEqual({ paidBy: "A", amount: 100 })
    expect(await b.pay({ amount: 200 }, { toolCallId: "call_1" })).toEqual({ paidBy: "B", amount: 200 })
    // Drift inside one ledger is still refused.
    await expect(b.pay({ amount: 300 }, { toolCallId: "call_1" })).rejects.toMatchObject({
      code: "args_drift",
    })
    expect([a.runs, b.runs]).toEqual([[100], [200]])
    // Each its own dispatch set, at the documented key (`tenant-a` -> `tenant-~a~dispatch:{id}`).
    const dispatch = (prefix: string) => `${prefix.slice(0, -1)}~${prefix.slice(-1)}~dispatch:call_1`
    expect(await raw.scard(dispatch(a.prefix))).toBe(1)
    expect(await raw.scard(dispatch(b.prefix))).toBe(2)
  })
})
