// Redis and Upstash with a prefix that does not end in ':' (or the empty one): the original's tombstone of request X,
// `{prefix}-tomb:X`, is also the row key of request `-tomb:X`. A value found there is X's tombstone only when it is
// X's row; under a row key, another request's row is refused. Before, the second of the two calls replayed the
// first's result (its body never ran), and get() answered a row of another request id.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LedgerStorage, newEntry } from "../../src/adapter-kit.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { ActionLedger, LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { taskRecord } from "./file-kit-stall-rows.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const tag = runTag("tombx")
const T0 = 1_800_000_000.5

beforeAll(requireUpstash)
afterAll(async () => {
  const raw = upstashClient()
  let cursor: string | number = "0"
  do {
    const [next, keys]: [string | number, string[]] = await raw.scan(cursor, {
      match: `*${tag}*`,
      count: 500,
    })
    if (keys.length) await raw.del(...keys)
    cursor = next
  } while (String(cursor) !== "0")
})

const stores: Array<[string, (prefix: string) => LedgerStorage & { close?: () => unknown }]> = [
  ["upstash", (prefix) => new UpstashLedgerStorage({ redis: upstashClient(), prefix })],
  ["redis", (prefix) => new RedisLedgerStorage({ url: REDIS_URL, prefix })],
]

describe.each(stores)("%s: request X and request '-tomb:X' are two requests", (name, open) => {
  const stores: Array<{ close?: () => unknown }> = []
  const make = (prefix: string) => {
    const s = open(prefix)
    stores.push(s)
    return s
  }
  afterAll(() => Promise.all(stores.map((s) => s.close?.())))
  const payTool = (storage: LedgerStorage) => {
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const runs: string[] = []
    const pay = ledger.tool({ name: "pay" }, async (a: { to: string }) => {
      runs.push(a.to)
      return `paid ${a.to} (run ${runs.length})`
    })
    return { ledger, pay, runs }
  }

  it("prefix without ':': each runs its own body and reads its own row", async () => {
    const storage = make(`${tag}-${name}-a`)
    const { ledger, pay, runs } = payTool(storage)
    const X = "order-1"
    expect(await pay({ to: "alice" }, { requestId: `-tomb:${X}` })).toBe("paid alice (run 1)")
    expect(await pay({ to: "bob" }, { requestId: X })).toBe("paid bob (run 2)")
    expect(runs).toEqual(["alice", "bob"])
    expect((await ledger.get(X))?.requestId).toBe(X)
    expect((await ledger.get(`-tomb:${X}`))?.requestId).toBe(`-tomb:${X}`)
  })

  it("prefix without ':': set() and compare-and-set of X ignore the row of '-tomb:X'", async () => {
    const storage = make(`${tag}-${name}-b`)
    const X = "order-2"
    const theirs = {
      ...newEntry({ requestId: `-tomb:${X}`, tool: "t", owner: "o" }, T0),
      fence: 5,
      leaseUntil: T0 + 600,
    }
    await storage.set(theirs)
    // X has no row: a compare-and-set of it finds nothing to match (it matched the other row, and wrote X).
    const next = { ...newEntry({ requestId: X, tool: "t", owner: "o" }, T0), fence: 5 }
    const expectation = { outcomes: ["IN_FLIGHT", "EXPIRED"] as const, owner: "o", fence: 5 }
    expect(await storage.tryTransition(next, expectation)).toBe(false)
    expect(await storage.get(X)).toBeNull()
    // The other row's fence is not X's: X's first write is no stale writer.
    await storage.set({ ...newEntry({ requestId: X, tool: "t" }, T0), fence: 1 })
    expect((await storage.get(X))?.fence).toBe(1)
    expect(await storage.get(`-tomb:${X}`)).toMatchObject({ requestId: `-tomb:${X}`, fence: 5 })
  })

  it("empty prefix: '-tomb:X' (whose row key holds X's tombstone) is refused, never a replay of X", async () => {
    const storage = make("")
    const { ledger, pay, runs } = payTool(storage)
    const X = `${tag}-${name}-order-3`
    expect(await pay({ to: "alice" }, { requestId: X })).toBe("paid alice (run 1)")
    await expect(pay({ to: "alice" }, { requestId: `-tomb:${X}` })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    expect(runs).toEqual(["alice"])
    await expect(storage.get(`-tomb:${X}`)).rejects.toMatchObject({ code: "ledger_row_invalid" })
    expect((await ledger.get(X))?.requestId).toBe(X)
  })
})

describe("upstash task store: task X and task '-tomb:X' under a prefix without ':'", () => {
  it("the tombstone of X is never read as the row of '-tomb:X': refused, and X reads as itself", async () => {
    const store = new UpstashTaskStore({ redis: upstashClient(), prefix: `${tag}-tasks` })
    const x = `${tag}-order`
    expect(await store.swap(x, null, taskRecord(x, "w1"))).toMatch(/^v/)
    expect((await store.get(x))?.row.request_id).toBe(x)
    // Refused by its id alone since such ids are refused before any read or write (docs/tasks.md).
    await expect(store.get(`-tomb:${x}`)).rejects.toMatchObject({ code: "task_id_ambiguous" })
  })
})
