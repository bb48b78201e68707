// The server PROCESS dies and comes back, on its own data: a private redis-server (AOF, appendfsync always) is
// SIGKILLed, a private Postgres (fsync on) is stopped with `pg_ctl stop -m immediate`. While it is down every
// call fails closed with LedgerStorageUnavailableError and no body runs; after the restart on the same data dir
// every completed call replays its stored result without running again, and the refused calls run exactly once.
// servers-ledger.test.ts cuts a TCP proxy instead; that shows the client side of an outage, not what the server
// itself keeps across a crash.
import { randomUUID } from "node:crypto"
import { Redis } from "@upstash/redis"
import { afterAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { ActionLedger, type LedgerStorage, LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { runTag } from "./servers/env.ts"
import {
  type PrivatePostgres,
  type PrivateUpstash,
  startPrivatePostgres,
  startPrivateUpstash,
} from "./servers/private-servers.ts"

const TAG = runTag("restart").replace(/-/g, "_")
const binding = { agentId: "payments", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" } as const
const N = 20
const DOWN = 5
const SERVER_MS = 20_000

interface Applied {
  id: string
  /** Fresh per execution: a replay returns the first execution's nonce only if it came from the store. */
  nonce: string
}

interface Restartable {
  storage: LedgerStorage
  stop(): Promise<void>
  restart(): Promise<void>
}

async function stopAndRestart(name: string, s: Restartable): Promise<void> {
  const ledger = new ActionLedger({ storage: s.storage, leaseTtl: 30, pollInterval: 0.02, pollTimeout: 2 })
  const bodies = new Map<string, number>()
  const effects = new Map<string, number>()
  const requestIds = new Map<string, string>()
  const mutate = ledger.tool({ name: "keyed_mutate", binding }, async (a: { id: string }, tx) => {
    bodies.set(a.id, (bodies.get(a.id) ?? 0) + 1)
    requestIds.set(a.id, tx.requestId)
    // The claim is durable before the body runs: the row is in the store, IN_FLIGHT under this fence.
    expect(await s.storage.get(tx.requestId)).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: tx.fence })
    return tx.sideEffect((): Applied => {
      effects.set(a.id, (effects.get(a.id) ?? 0) + 1)
      return { id: a.id, nonce: randomUUID() }
    })
  })
  const call = (id: string) => mutate({ id }, { toolCallId: `${TAG}-${name}-${id}` })
  const sum = (m: Map<string, number>) => [...m.values()].reduce((x, y) => x + y, 0)
  const before = Array.from({ length: N }, (_, i) => `before-${i}`)
  const during = Array.from({ length: DOWN }, (_, i) => `during-${i}`)

  // (a) N calls complete.
  const first = new Map<string, Applied>()
  for (const [i, r] of (await Promise.all(before.map(call))).entries()) first.set(before[i]!, r)
  expect(sum(bodies)).toBe(N)
  expect(sum(effects)).toBe(N)

  // (b) The server process is gone: every call fails closed, and no body starts without a durable claim.
  await s.stop()
  const refused = await Promise.allSettled([...during.map(call), call(before[0]!)])
  for (const o of refused) {
    expect(o.status).toBe("rejected")
    expect((o as PromiseRejectedResult).reason).toBeInstanceOf(LedgerStorageUnavailableError)
  }
  expect(sum(bodies)).toBe(N)
  expect(sum(effects)).toBe(N)

  // (c) Same data dir, same port.
  await s.restart()

  // (d) Nothing lost: every row the server acknowledged before it died is back, COMPLETED with its result.
  for (const id of before) {
    const row = await s.storage.get(requestIds.get(id)!)
    expect(row, id).toMatchObject({ terminalOutcome: "COMPLETED", result: first.get(id) })
  }
  for (const id of before) expect(await call(id)).toEqual(first.get(id))
  for (const id of before) {
    expect(bodies.get(id), id).toBe(1)
    expect(effects.get(id), id).toBe(1)
  }
  // Refused while down, so never claimed: they run now, exactly once, and then replay.
  const late = new Map<string, Applied>()
  for (const id of during) late.set(id, await call(id))
  for (const id of during) expect(await call(id)).toEqual(late.get(id))
  for (const id of during) {
    expect(bodies.get(id), id).toBe(1)
    expect(effects.get(id), id).toBe(1)
  }
  expect(sum(bodies)).toBe(N + DOWN)
  expect(sum(effects)).toBe(N + DOWN)
}

// Servers start inside the test, not in beforeAll: a failed hook reports the test as skipped, and a missing
// binary must show as a failure. afterAll still stops whatever did start.
describe("upstash: redis-server SIGKILLed and restarted on its AOF", () => {
  let upstash: PrivateUpstash | undefined
  afterAll(async () => {
    await upstash?.close()
  }, SERVER_MS)

  it(
    "fails closed while Redis is down, continues after the restart with nothing lost",
    async () => {
      const u = await startPrivateUpstash()
      upstash = u
      const redis = new Redis({ url: u.url, token: u.token, retry: false })
      const shim = u.shimPid()
      await stopAndRestart("upstash", {
        storage: new UpstashLedgerStorage({ redis, prefix: `mycelium-test:${TAG}:` }),
        stop: () => u.killRedis(),
        restart: () => u.startRedis(),
      })
      // Only Redis restarted: the REST endpoint in front of it stayed up throughout.
      expect(u.shimPid()).toBe(shim)
    },
    SERVER_MS,
  )
})

describe("neon: Postgres stopped immediately and restarted on its data dir", () => {
  let pg: PrivatePostgres | undefined
  afterAll(async () => {
    await pg?.close()
  }, SERVER_MS)

  it(
    "fails closed while Postgres is down, continues after the restart with nothing lost",
    async () => {
      const p = await startPrivatePostgres()
      pg = p
      const storage = new NeonLedgerStorage({ pool: p.pool(), table: `restart_${TAG}` })
      await storage.migrate()
      await stopAndRestart("neon", { storage, stop: () => p.stopImmediate(), restart: () => p.start() })
    },
    SERVER_MS,
  )
})
