// Request ids whose text is also JSON (`["x"]`, `{"k":1}`, `"quoted"`, `1.0`, `null`, `-0`) are ids like any other, in
// every store. @upstash/redis JSON-parses each string of a script's reply by default (`automaticDeserialization`), and
// the Upstash scripts answered a dispatch set's sibling ids as bare strings: `["x"]` reached the adapter as an array,
// whose String() is `x`, another id. A claim under that tool-call id was written, then failed reading its siblings
// (LedgerStorageUnavailableError, the row stranded IN_FLIGHT), and findByDispatchId lost the row. Kept out of the
// published conformance suite (src/conformance), whose bundle is at its size budget; every store of this repository
// that runs under Node is here instead, the Upstash one with either deserialization setting.
import { Redis } from "@upstash/redis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerIdentityConflictError,
  type LedgerStorage,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { tempDirs } from "../temp-dirs.ts"
import {
  dropKeys,
  dropLedgerTable,
  REDIS_URL,
  requireUpstash,
  runTag,
  UPSTASH_TOKEN,
  UPSTASH_URL,
} from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const IDS = ['["x"]', '{"k":1}', '"quoted"', "1.0", "null", "-0", "[]"]
const T0 = 1_800_000_000.5
const base = `mycelium-test:${runTag("json-ids")}`
const table = `mycelium_test_${runTag("json_ids").replace(/-/g, "_")}`
const pool = neonPool()
const dir = tempDirs("mycelium-json-ids-")

beforeAll(async () => {
  await requireUpstash()
  await requirePostgres(pool)
  await new NeonLedgerStorage({ pool, table }).migrate()
})
afterAll(async () => {
  await dropKeys(`${base}:*`)
  await dropLedgerTable(pool, table)
  await pool.end()
})

const upstash = (automaticDeserialization: boolean) =>
  new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN, automaticDeserialization, enableTelemetry: false })

const stores: Array<[string, () => LedgerStorage]> = [
  ["memory", () => new MemoryLedgerStorage()],
  ["file", () => new FileLedgerStorage(`${dir()}/ledger.json`)],
  ["upstash", () => new UpstashLedgerStorage({ redis: upstash(true), prefix: `${base}:u:action:` })],
  [
    "upstash, automaticDeserialization false",
    () => new UpstashLedgerStorage({ redis: upstash(false), prefix: `${base}:u-raw:action:` }),
  ],
  [
    "upstash, dispatchLookup scan",
    () =>
      new UpstashLedgerStorage({
        redis: upstash(true),
        prefix: `${base}:u-scan:action:`,
        dispatchLookup: "scan",
      }),
  ],
  ["redis (TCP)", () => new RedisLedgerStorage({ url: REDIS_URL, prefix: `${base}:r:action:` })],
  ["neon", () => new NeonLedgerStorage({ pool, table })],
]

const ids = (rows: readonly LedgerEntry[] | undefined) => rows?.map((e) => e.requestId).sort()

describe.each(stores)("%s: request ids that read as JSON", (_, open) => {
  let s: LedgerStorage
  beforeAll(() => {
    s = open()
  })
  afterAll(() => s.close?.())

  for (const odd of IDS) {
    it(`${odd}: claimed under a tool-call id, it is itself to the next claim, findByDispatchId, get and list`, async () => {
      const tc = `tc-${runTag("j")}-${IDS.indexOf(odd)}`
      const first = await s.tryClaimInflight(
        newEntry({ requestId: odd, tool: "t", kwargs: { tool_call_id: tc } }, T0),
        60,
        T0,
        { dispatchId: tc, reclaimFence: null },
      )
      expect(first.outcome).toBe("claimed")
      const plain = `plain-${tc}`
      const second = await s.tryClaimInflight(
        newEntry({ requestId: plain, tool: "t", kwargs: { tool_call_id: tc } }, T0),
        60,
        T0,
        { dispatchId: tc },
      )
      expect(second.outcome).toBe("claimed")
      if (second.outcome === "claimed" && second.dispatchSiblings)
        expect(ids(second.dispatchSiblings)).toEqual([odd])
      expect(ids(await s.findByDispatchId?.(tc))).toEqual([odd, plain].sort())
      expect((await s.get(odd))?.requestId).toBe(odd)
      const listed: string[] = []
      for await (const e of s.list({ prefix: odd })) listed.push(e.requestId)
      expect(listed).toContain(odd)
    })
  }

  it("an explicit id that reads as JSON is judged as any other: a second request id under its tool-call id is an identity conflict, its row settled", async () => {
    const ledger = new ActionLedger({ storage: s, leaseTtl: 60, onWarning: () => {} })
    let runs = 0
    const pay = ledger.tool({ name: "pay" }, async (a: { amount: number }) => {
      runs++
      return `paid ${a.amount}`
    })
    const tc = `tc-ledger-${runTag("j")}`
    const odd = `["order-7-${tc}"]`
    expect(await pay({ amount: 1 }, { requestId: odd, toolCallId: tc })).toBe("paid 1")
    await expect(pay({ amount: 1 }, { requestId: `order-8-${tc}`, toolCallId: tc })).rejects.toBeInstanceOf(
      LedgerIdentityConflictError,
    )
    expect(runs).toBe(1)
    expect((await s.get(`order-8-${tc}`))?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(await pay({ amount: 1 }, { requestId: odd, toolCallId: tc })).toBe("paid 1")
    expect(runs).toBe(1)
  })
})
