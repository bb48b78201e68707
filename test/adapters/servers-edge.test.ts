// @vitest-environment edge-runtime
// Both adapters in Vercel's edge runtime (no Node globals) against the same local services: Upstash over fetch,
// Neon over the runtime's own WebSocket through the WebSocket→Postgres proxy. Fails when a service is missing.
import { neonConfig, Pool } from "@neondatabase/serverless"
import { Redis } from "@upstash/redis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { dropLedgerTable } from "./servers/env.ts"

// The edge runtime has no `process`; the host's settings come through only where vitest exposes them.
const hostEnv = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {}
const UPSTASH_URL = hostEnv.UPSTASH_REDIS_REST_URL ?? "http://127.0.0.1:8079"
const UPSTASH_TOKEN = hostEnv.UPSTASH_REDIS_REST_TOKEN ?? "local-token"
const DATABASE_URL = hostEnv.DATABASE_URL ?? "postgres://app:app@127.0.0.1:5433/app"
const NEON_WS_PROXY = hostEnv.NEON_WS_PROXY ?? "127.0.0.1:6543"

neonConfig.wsProxy = (host, port) => `${NEON_WS_PROXY}/v1?address=${host}:${port}`
neonConfig.useSecureWebSocket = false
neonConfig.pipelineTLS = false
neonConfig.pipelineConnect = false

const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const table = `edge_${tag}`
const redis = () => new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN })
const binding = { agentId: "edge", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const pool = new Pool({ connectionString: DATABASE_URL, max: 5 })
pool.on("error", () => {})

beforeAll(async () => {
  expect(typeof (globalThis as { EdgeRuntime?: unknown }).EdgeRuntime).toBe("string")
  try {
    await redis().exists("mycelium-test:health")
  } catch (e) {
    throw new Error(
      `Upstash REST server at ${UPSTASH_URL} is not answering from the edge runtime: ${String(e)}`,
    )
  }
  try {
    await new NeonLedgerStorage({ pool, table }).migrate()
  } catch (e) {
    throw new Error(`Postgres via ${NEON_WS_PROXY} is not answering from the edge runtime: ${String(e)}`)
  }
})
afterAll(async () => {
  await dropLedgerTable(pool, table)
  await pool.end()
})

testLedgerStorage("upstash (edge runtime)", () => ({
  storage: new UpstashLedgerStorage({ redis: redis(), prefix: `mycelium-edge:${tag}:action:` }),
  peer: new UpstashLedgerStorage({ redis: redis(), prefix: `mycelium-edge:${tag}:action:` }),
}))

testLedgerStorage("neon (edge runtime)", () => ({ storage: new NeonLedgerStorage({ pool, table }) }))

describe("a ledgered tool in the edge runtime", () => {
  for (const [name, storage] of [
    ["upstash", () => new UpstashLedgerStorage({ redis: redis(), prefix: `mycelium-edge:${tag}:ledger:` })],
    ["neon", () => new NeonLedgerStorage({ pool, table })],
  ] as const) {
    it(`${name}: runs once and replays to every redispatch`, async () => {
      const ledger = new ActionLedger({ storage: storage(), leaseTtl: 30, pollInterval: 0.02 })
      let runs = 0
      const send = ledger.tool({ name: "send", binding }, async (a: { to: string }) => {
        runs++
        return { sent: a.to }
      })
      const out = await Promise.all(
        Array.from({ length: 10 }, () => send({ to: name }, { toolCallId: `${tag}-${name}` })),
      )
      expect(out.every((o) => o.sent === name)).toBe(true)
      expect(runs).toBe(1)
    })
  }
})
