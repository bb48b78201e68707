// Upstash with any prefix: derived keys (tombstones, dispatch index) never lie under the row prefix, list()
// returns each row once, and a Python worker scanning `{prefix}*` (the original's list_all, which its drift gate
// runs on every claim with a tool_call_id) reads only ledger rows. Prefixes `tenant-a`, `tenant-a:` on the shared
// Redis; the empty prefix on a private one, because every key of a database lies under it.
import { Redis } from "@upstash/redis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { derivedBase } from "../../src/adapters/upstash-kit.ts"
import { ActionLedger, type LedgerEntry } from "../../src/core/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { type PrivateUpstash, startPrivateUpstash } from "./servers/private-servers.ts"

const T0 = 1_800_000_000.5
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

/** SCAN `{prefix}*` then GET each key and read it as a row, as the Python original's list_all does. */
async function pythonListAll(redis: Redis, prefix: string): Promise<Array<Record<string, unknown>>> {
  const rows: Array<Record<string, unknown>> = []
  let cursor: string | number = "0"
  do {
    const [next, keys]: [string | number, string[]] = await redis.scan(cursor, {
      match: `${prefix}*`,
      count: 500,
    })
    for (const k of keys) {
      // GET on a set is WRONGTYPE: the failure a dispatch index under the prefix caused.
      const v = await redis.get<unknown>(k)
      const row = (typeof v === "string" ? JSON.parse(v) : v) as Record<string, unknown>
      // from_dict requires these.
      for (const f of ["request_id", "tool", "status"]) expect(typeof row[f], `${k}.${f}`).toBe("string")
      rows.push(row)
    }
    cursor = next
  } while (String(cursor) !== "0")
  return rows
}

async function allKeys(redis: Redis, match: string): Promise<string[]> {
  const out: string[] = []
  let cursor: string | number = "0"
  do {
    const [next, keys]: [string | number, string[]] = await redis.scan(cursor, { match, count: 500 })
    out.push(...keys.map(String))
    cursor = next
  } while (String(cursor) !== "0")
  return out.sort()
}

/** Calls through the ledger (rows, tombstones, dispatch index), a Python-written row, a drifted re-send. */
async function exercise(redis: Redis, prefix: string): Promise<{ ids: string[]; listed: LedgerEntry[] }> {
  const storage = new UpstashLedgerStorage({ redis, prefix })
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  let runs = 0
  const pay = ledger.tool({ name: "pay", binding }, async (a: { n: number }) => {
    runs++
    return a.n
  })
  const ids: string[] = []
  for (let i = 0; i < 3; i++) {
    await pay({ n: i }, { toolCallId: `call-${i}` })
    await pay({ n: i }, { toolCallId: `call-${i}` })
  }
  // A drifted re-send of call-0 is refused by the dispatch-sibling check, with or without an index.
  await expect(pay({ n: 99 }, { toolCallId: "call-0" })).rejects.toMatchObject({ code: "args_drift" })
  expect(runs).toBe(3)
  // A row written by the Python original, with its tombstone where the original puts it.
  const py = `py-${Math.random().toString(36).slice(2, 8)}`
  const pyRow = JSON.stringify({
    request_id: py,
    tool: "pay",
    args: [],
    kwargs: { n: 7 },
    status: "completed",
    terminal_outcome: "COMPLETED",
    fence: 1,
    result: 7,
    started_at: T0,
    finished_at: T0,
  })
  const pyTomb = `${prefix.endsWith(":") ? prefix.slice(0, -1) : prefix}-tomb:${py}`
  await redis.set(`${prefix}${py}`, pyRow)
  await redis.set(pyTomb, pyRow)
  const listed: LedgerEntry[] = []
  for await (const e of storage.list()) listed.push(e)
  for (const e of listed) ids.push(e.requestId)
  return { ids, listed }
}

beforeAll(requireUpstash)

describe("upstash prefixes: derived keys outside the row prefix, rows listed once, Python's scan works", () => {
  const raw = upstashClient()
  const base = `mycelium-test:${runTag("prefix")}:`
  afterAll(async () => {
    const left = await allKeys(raw, `${base}*`)
    if (left.length) await raw.del(...left)
  })

  it("derivedBase: outside the prefix, and one base per prefix (tenant-a and tenant-b never share one)", () => {
    expect(derivedBase("mycelium:action:")).toBe("mycelium:action-")
    expect(derivedBase("tenant-a")).toBe("tenant-~a~")
    expect(derivedBase("tenant-b")).toBe("tenant-~b~")
    expect(derivedBase("tenant-")).toBe("tenant~-~")
    expect(derivedBase("tenant~")).toBe("tenant!~!")
    expect(derivedBase("x")).toBe("~x~")
    expect(derivedBase("")).toBeNull()
    // Before, both were `X~a-`: tenant `Xa` replayed the calls of tenant `X~a:`.
    expect(derivedBase("X~a:")).not.toBe(derivedBase("Xa"))
  })

  it("derivedBase over every prefix of up to 4 characters from ':', '~', '!', '-', 'a': distinct, never under p", () => {
    const alphabet = [":", "~", "!", "-", "a"]
    let prefixes = [""]
    const all: string[] = []
    for (let n = 0; n < 4; n++) {
      prefixes = prefixes.flatMap((p) => alphabet.map((c) => p + c))
      all.push(...prefixes)
    }
    const owner = new Map<string, string>()
    for (const p of all) {
      const base = derivedBase(p) as string
      expect(base.startsWith(p), `${p} -> ${base}`).toBe(false)
      expect(owner.get(base), `${p} and ${owner.get(base)} -> ${base}`).toBeUndefined()
      owner.set(base, p)
    }
    expect(owner.size).toBe(780)
  })

  for (const suffix of ["tenant-a", "tenant-a:"]) {
    it(`prefix '${suffix}': every row once, no derived key under the prefix, Python's list_all reads rows only`, async () => {
      // Each case under its own root, so the keys one case leaves never count in another.
      const root = `${base}${suffix.replace(/\W/g, "_")}/`
      const prefix = root + suffix
      const { ids, listed } = await exercise(raw, prefix)
      // 3 calls + the drifted re-send's refused row + the Python row: each exactly once.
      expect(ids).toHaveLength(5)
      expect(new Set(ids).size).toBe(5)
      expect(listed.filter((e) => e.tool === "pay" && e.terminalOutcome === "COMPLETED")).toHaveLength(4)
      const underPrefix = await allKeys(raw, `${prefix}*`)
      const derived = (await allKeys(raw, `${root}*`)).filter((k) => !underPrefix.includes(k))
      expect(derived.some((k) => k.includes("dispatch:"))).toBe(true)
      expect(derived.some((k) => k.includes("tomb:"))).toBe(true)
      // Under the prefix: our rows, and when it has no ':' every row's tombstone where the original reads it.
      const pythonTombs = underPrefix.filter((k) => !ids.some((id) => k === prefix + id))
      expect(pythonTombs).toHaveLength(suffix.endsWith(":") ? 0 : ids.length)
      const seen = await pythonListAll(raw, prefix)
      expect(seen.length).toBe(underPrefix.length)
    })
  }

  it("prefix 'tenant-a': a row known only from the original's tombstone location is still found (no fresh claim)", async () => {
    const prefix = `${base}legacy/old-tenant`
    const s = new UpstashLedgerStorage({ redis: raw, prefix, now: () => T0 })
    const rid = "evicted"
    const row = JSON.stringify({
      request_id: rid,
      tool: "t",
      args: [],
      kwargs: {},
      status: "in-flight",
      terminal_outcome: "IN_FLIGHT",
      fence: 3,
      lease_until: T0 + 600,
      started_at: T0,
    })
    // The primary key was evicted; only the tombstone an older version or the original wrote remains.
    await raw.set(`${prefix}-tomb:${rid}`, row)
    expect(await s.get(rid)).toMatchObject({ fence: 3, leaseUntil: T0 - 1 })
    const re = await s.tryClaimInflight(newEntry({ requestId: rid, tool: "t" }, T0), 60, T0)
    expect(re).toMatchObject({ outcome: "claimed", entry: { fence: 4 } })
    const listed: string[] = []
    for await (const e of s.list()) listed.push(e.requestId)
    expect(listed).toEqual([rid])
  })
})

describe("upstash with the empty prefix (private Redis: every key lies under it)", () => {
  let server: PrivateUpstash
  let redis: Redis
  beforeAll(async () => {
    server = await startPrivateUpstash()
    redis = new Redis({ url: server.url, token: server.token })
  }, 30_000)
  afterAll(() => server?.close())

  it("keeps no index set, lists every row once, skips foreign keys, and Python's scan of '*' reads rows only", async () => {
    await redis.set("someone-else:plain", "not json")
    await redis.set("someone-else:json", JSON.stringify({ a: 1 }))
    const { ids } = await exercise(redis, "")
    expect(ids).toHaveLength(5)
    expect(new Set(ids).size).toBe(5)
    await redis.del("someone-else:plain", "someone-else:json")
    // GETs every key of the database: a set (an index) anywhere would be WRONGTYPE.
    const seen = await pythonListAll(redis, "")
    // Rows plus tombstones (the original's own layout for this prefix), nothing else.
    expect(seen.length).toBe(10)
    expect(new Set(seen.map((r) => r.request_id)).size).toBe(5)
  })

  it("the row of the id '' is its key '': a second claim finds the live claim, never its tombstone's ghost", async () => {
    // The ledger refuses the id ''; a store used directly (or an original's row of it) may hold one.
    const s = new UpstashLedgerStorage({ redis, prefix: "", now: () => T0 })
    const first = await s.tryClaimInflight(newEntry({ requestId: "", tool: "pay", owner: "a" }, T0), 60, T0)
    expect(first).toMatchObject({ outcome: "claimed", entry: { fence: 1 } })
    const second = await s.tryClaimInflight(newEntry({ requestId: "", tool: "pay", owner: "b" }, T0), 60, T0)
    expect(second).toMatchObject({ outcome: "in_flight", entry: { fence: 1, owner: "a" } })
    expect(await s.get("")).toMatchObject({ fence: 1, owner: "a", leaseUntil: T0 + 60 })
    await redis.del("", "-tomb:")
  })
})
