// test/core/ledger/stored-expired.test.ts over the server stores: a row stored as EXPIRED itself (a legacy row, a
// field repair of one) is hard-blocked once, marked dead and released by each store's compare-and-set as by memory's.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { neon, neonConfig } from "@neondatabase/serverless"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import {
  ActionLedger,
  argsFingerprint,
  type LedgerEntry,
  LedgerHardBlockError,
  type LedgerStorage,
  ToolTransitionBinding,
  transitionKey,
} from "../../src/core/index.ts"
import { ManualClock } from "../../src/testing.ts"
import { DATABASE_URL, dropLedgerTable, requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"
import { type NeonHttpEmulation, startNeonHttpEmulation } from "./servers/neon-http.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const NOW = 1_800_000_000
const TAG = runTag("expired").replace(/-/g, "_")
const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" as const }
const pool = neonPool()
const root = mkdtempSync(join(tmpdir(), "mycelium-expired-"))
const tables: string[] = []
const closers: Array<() => unknown> = []
let emu: NeonHttpEmulation
let n = 0

beforeAll(async () => {
  await requireUpstash()
  await requirePostgres(pool)
  emu = await startNeonHttpEmulation()
  neonConfig.fetchEndpoint = emu.endpoint
})
afterAll(async () => {
  for (const c of closers) await c()
  for (const t of tables) await dropLedgerTable(pool, t)
  await pool.end()
  await emu.stop()
  rmSync(root, { recursive: true, force: true })
})

const stores: Array<[string, () => Promise<LedgerStorage>]> = [
  ["file", async () => new FileLedgerStorage(join(root, `l${n++}`, "ledger.json"), { fsync: false })],
  [
    "redis",
    async () => {
      const s = new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${TAG}:${n++}:` })
      closers.push(() => s.close())
      return s
    },
  ],
  [
    "upstash",
    async () => new UpstashLedgerStorage({ redis: upstashClient(), prefix: `mycelium-test:${TAG}:${n++}:` }),
  ],
  [
    "neon (Pool)",
    async () => {
      const s = new NeonLedgerStorage({ pool, table: `exp_ws_${TAG}_${n++}` })
      await s.migrate()
      tables.push(s.table)
      return s
    },
  ],
  [
    "neon (HTTP)",
    async () => {
      const s = new NeonLedgerStorage({ sql: neon(DATABASE_URL), table: `exp_http_${TAG}_${n++}` })
      await s.migrate()
      tables.push(s.table)
      return s
    },
  ],
]

/** Fails loudly instead of hanging: a claim loop that only re-reads never yields to a timer. */
function spinGuarded(store: LedgerStorage): LedgerStorage {
  let reads = 0
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === "get")
        return async (id: string): Promise<LedgerEntry | null> => {
          if (++reads > 200) throw new Error("claim loop re-read the row 200 times without settling it")
          return target.get(id)
        }
      const v: unknown = Reflect.get(target, key, receiver)
      return typeof v === "function" ? v.bind(target) : v
    },
  })
}

async function setup(make: () => Promise<LedgerStorage>) {
  const storage = spinGuarded(await make())
  const requestId = `pay-${n++}`
  const clock = new ManualClock(NOW)
  const ledger = new ActionLedger({ storage, clock, pollTimeout: 1, pollInterval: 0.1, onWarning: () => {} })
  const effectId = transitionKey({
    tool: "pay",
    binding: ToolTransitionBinding.from(binding),
    argsFingerprint: argsFingerprint({ amount: 5 }),
    dispatchId: requestId,
  })
  await storage.set(
    newEntry(
      {
        requestId,
        tool: "pay",
        kwargs: { amount: 5, request_id: requestId },
        owner: "py-host:4242",
        fence: 2,
        effectProtocolRequired: true,
        decision: { allowed: true, verdicts: [], deniedReasons: [] },
        effectPhase: "ATTEMPTING",
        effectId,
        terminalOutcome: "EXPIRED",
        status: "in-flight",
        leaseUntil: NOW - 30,
        lastHeartbeatAt: NOW - 60,
      },
      NOW - 60,
    ),
  )
  let runs = 0
  const pay = ledger.tool({ name: "pay", binding }, async () => {
    runs++
    return "charged"
  })
  return { storage, ledger, pay, requestId, runs: () => runs }
}

describe.each(stores)("a row stored as EXPIRED, in %s", (_name, make) => {
  it("a keyed redispatch hard-blocks it once and converts it to BLOCKED, without running", async () => {
    const { storage, pay, requestId, runs } = await setup(make)
    await expect(pay({ amount: 5 }, { requestId })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(await storage.get(requestId)).toMatchObject({
      terminalOutcome: "BLOCKED",
      status: "failed",
      fence: 2,
    })
    await expect(pay({ amount: 5 }, { requestId })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(runs()).toBe(0)
  })

  it("marked dead and released not_executed: one re-run, then replays", async () => {
    const { storage, ledger, pay, requestId, runs } = await setup(make)
    await ledger.markWorkerDeadFor(requestId, { by: "ops", reason: "host gone", overrideHeartbeat: true })
    const released = await ledger.release(requestId, {
      verified: "not_executed",
      by: "ops",
      reason: "no charge",
    })
    expect(released).toMatchObject({ releasedFromOutcome: "EXPIRED", terminalOutcome: "BLOCKED", fence: 3 })
    expect(await pay({ amount: 5 }, { requestId })).toBe("charged")
    expect(await pay({ amount: 5 }, { requestId })).toBe("charged")
    expect(runs()).toBe(1)
    expect(await storage.get(requestId)).toMatchObject({ terminalOutcome: "COMPLETED", fence: 4 })
  })

  it("released completed: redispatches replay the verified result", async () => {
    const { ledger, pay, requestId, runs } = await setup(make)
    await ledger.release(requestId, { verified: "completed", result: "ch_9", by: "ops", reason: "seen" })
    expect(await pay({ amount: 5 }, { requestId })).toBe("ch_9")
    expect(runs()).toBe(0)
  })
})
