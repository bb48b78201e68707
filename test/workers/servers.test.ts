// The Upstash and Neon adapters inside workerd, against the same local services as the node tests:
// `@upstash/redis/cloudflare` over fetch to the Upstash REST server, the neon Pool over workerd's own WebSocket
// through the WebSocket→Postgres proxy. Fails (never skips) when a service is missing.

import { env } from "cloudflare:workers"
import { neonConfig, Pool } from "@neondatabase/serverless"
import { Redis } from "@upstash/redis/cloudflare"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger } from "../../src/core/index.ts"

const setting = (name: string, fallback: string): string => {
  const v = (env as Record<string, unknown>)[name]
  return typeof v === "string" && v ? v : fallback
}
const UPSTASH_URL = setting("UPSTASH_REDIS_REST_URL", "http://127.0.0.1:8079")
const UPSTASH_TOKEN = setting("UPSTASH_REDIS_REST_TOKEN", "local-token")
const DATABASE_URL = setting("DATABASE_URL", "postgres://app:app@127.0.0.1:5433/app")
const NEON_WS_PROXY = setting("NEON_WS_PROXY", "127.0.0.1:6543")

neonConfig.wsProxy = (host, port) => `${NEON_WS_PROXY}/v1?address=${host}:${port}`
neonConfig.useSecureWebSocket = false
neonConfig.pipelineTLS = false
neonConfig.pipelineConnect = false

const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const table = `workerd_${tag}`
const redis = () => new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN })
const binding = { agentId: "edge", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

describe("inside workerd", () => {
  it("runs in workerd", () => {
    expect(navigator.userAgent).toBe("Cloudflare-Workers")
  })
})

describe("upstash adapter in workerd", () => {
  beforeAll(async () => {
    try {
      await redis().exists("mycelium-test:health")
    } catch (e) {
      throw new Error(`Upstash REST server at ${UPSTASH_URL} is not answering from workerd: ${String(e)}`)
    }
  })

  testLedgerStorage("upstash (workerd)", () => ({
    storage: new UpstashLedgerStorage({ redis: redis(), prefix: `mycelium-workerd:${tag}:action:` }),
    peer: new UpstashLedgerStorage({ redis: redis(), prefix: `mycelium-workerd:${tag}:action:` }),
  }))

  it("a ledgered tool runs once and replays", async () => {
    const storage = new UpstashLedgerStorage({ redis: redis(), prefix: `mycelium-workerd:${tag}:ledger:` })
    const ledger = new ActionLedger({ storage, leaseTtl: 30, pollInterval: 0.02 })
    let runs = 0
    const send = ledger.tool({ name: "send", binding }, async (a: { to: string }) => {
      runs++
      return { sent: a.to }
    })
    const out = await Promise.all(
      Array.from({ length: 10 }, () => send({ to: "x" }, { toolCallId: `${tag}-u` })),
    )
    expect(out.every((o) => o.sent === "x")).toBe(true)
    expect(runs).toBe(1)
  })
})

describe("neon adapter in workerd (Pool over WebSocket)", () => {
  // One pool per test: workerd ties sockets to the request that opened them.
  const pools: Pool[] = []
  const pool = () => {
    const p = new Pool({ connectionString: DATABASE_URL, max: 4 })
    p.on("error", () => {})
    pools.push(p)
    return p
  }

  beforeAll(async () => {
    const p = new Pool({ connectionString: DATABASE_URL, max: 1 })
    try {
      await new NeonLedgerStorage({ pool: p, table }).migrate()
    } catch (e) {
      throw new Error(`Postgres via ${NEON_WS_PROXY} is not answering from workerd: ${String(e)}`)
    } finally {
      await p.end()
    }
  })
  afterAll(async () => {
    const p = new Pool({ connectionString: DATABASE_URL, max: 1 })
    await p.query(`DROP TABLE IF EXISTS ${table}; DROP FUNCTION IF EXISTS ${table}_claim`)
    await p.end()
  })

  testLedgerStorage("neon (workerd)", () => {
    const a = pool()
    const b = pool()
    return {
      storage: new NeonLedgerStorage({ pool: a, table }),
      peer: new NeonLedgerStorage({ pool: b, table }),
      cleanup: async () => {
        await Promise.allSettled(pools.splice(0).map((p) => p.end()))
      },
    }
  })

  it("a ledgered tool runs once and replays", async () => {
    const p = pool()
    try {
      const ledger = new ActionLedger({
        storage: new NeonLedgerStorage({ pool: p, table }),
        leaseTtl: 30,
        pollInterval: 0.02,
      })
      let runs = 0
      const send = ledger.tool({ name: "send", binding }, async (a: { to: string }) => {
        runs++
        return { sent: a.to }
      })
      const out = await Promise.all(
        Array.from({ length: 10 }, () => send({ to: "y" }, { toolCallId: `${tag}-n` })),
      )
      expect(out.every((o) => o.sent === "y")).toBe(true)
      expect(runs).toBe(1)
    } finally {
      await p.end()
    }
  })
})
