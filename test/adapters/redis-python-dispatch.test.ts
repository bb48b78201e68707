// A Python worker and a TypeScript worker on one Redis ledger: the same tool-call id re-sent with other arguments
// must be refused whoever claimed it first. The original keeps no dispatch index (it scans its rows), so this
// adapter's index never holds the rows it claims; `dispatchLookup: "scan"` (YAML `dispatch_lookup: scan`) looks as
// the original does. Found by `npm run interop:python` on a shared Redis: a TypeScript worker paid 999 under a
// tool-call id a Python worker had already paid 250 under.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger, LedgerIdentityConflictError, type LedgerStorage } from "../../src/core/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const base = `mycelium-test:${runTag("py-dispatch")}`
const prefix = `${base}:action:`
const raw = upstashClient()

// What the original's RedisLedgerStorage writes for a completed call: the row and its tombstone, nothing else.
const pythonRow = (id: string, callId: string) =>
  `{"request_id": "${id}", "tool": "send_payment", "args": [], "kwargs": {"amount": 250, "recipient": "acct_1", ` +
  `"tool_call_id": "${callId}"}, "status": "completed", "terminal_outcome": "COMPLETED", "fence": 1, ` +
  `"result": {"paid": 250, "by": "python"}, "error": null, "started_at": 1796417269.4259126, ` +
  `"finished_at": 1796417269.4297354, "lease_until": null, "owner": "vm:9564", "idempotency_key": "${id}", ` +
  `"side_effect_boundary": "crossed"}`
const writePythonRow = async (id: string, callId: string) => {
  await raw.set(`${prefix}${id}`, pythonRow(id, callId))
  await raw.set(`${base}:action-tomb:${id}`, pythonRow(id, callId))
}

const binding = { agentId: "interop", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

beforeAll(requireUpstash)
afterAll(async () => {
  const keys = await raw.keys(`${base}:*`)
  if (keys.length) await raw.del(...keys)
})

// The scan path under the full contract (claims, races, siblings), on the server that runs the Lua scripts.
testLedgerStorage("redis (TCP) with dispatchLookup: scan", () => {
  const p = `${base}-conf:action:`
  const storage = new RedisLedgerStorage({ url: REDIS_URL, prefix: p, dispatchLookup: "scan" })
  const peer = new RedisLedgerStorage({ url: REDIS_URL, prefix: p, dispatchLookup: "scan" })
  return {
    storage,
    peer,
    cleanup: async () => {
      const keys = await raw.keys(`${base}-conf*`)
      if (keys.length) await raw.del(...keys)
      await storage.close()
      await peer.close()
    },
  }
})

const stores: Array<[string, () => LedgerStorage & { close?(): Promise<void> }]> = [
  ["upstash", () => new UpstashLedgerStorage({ redis: upstashClient(), prefix, dispatchLookup: "scan" })],
  ["redis (TCP)", () => new RedisLedgerStorage({ url: REDIS_URL, prefix, dispatchLookup: "scan" })],
]

describe("dispatchLookup: scan sees the rows a Python worker claimed", () => {
  for (const [name, make] of stores) {
    it(`${name}: drifted arguments under a Python row's tool-call id are refused, the tool never runs`, async () => {
      const callId = `call-py-${name.slice(0, 5)}`
      await writePythonRow(`py-row-${name.slice(0, 5)}`, callId)
      const storage = make()
      let runs = 0
      const pay = new ActionLedger({ storage, onWarning: () => {} }).tool(
        { name: "send_payment", binding },
        async (args: { amount: number; recipient: string }, tx) => {
          runs++
          return tx.sideEffect(() => ({ paid: args.amount }))
        },
      )
      try {
        for (let i = 0; i < 3; i++)
          await expect(
            pay({ amount: 999, recipient: "acct_1" }, { toolCallId: callId }),
          ).rejects.toBeInstanceOf(LedgerIdentityConflictError)
        expect(runs).toBe(0)
      } finally {
        await storage.close?.()
      }
    })
  }

  it("still writes the index: a store on the default lookup finds what a scanning one claimed", async () => {
    const scanning = new RedisLedgerStorage({ url: REDIS_URL, prefix, dispatchLookup: "scan" })
    const indexed = new UpstashLedgerStorage({ redis: upstashClient(), prefix })
    const callId = "call-ts-scan"
    try {
      const pay = new ActionLedger({ storage: scanning }).tool(
        { name: "send_payment", binding },
        async () => 1,
      )
      await pay({ amount: 1, recipient: "acct_1" }, { toolCallId: callId })
      const found = await indexed.findByDispatchId(callId)
      expect(found.map((e) => e.tool)).toEqual(["send_payment"])
    } finally {
      await scanning.close()
    }
  })

  for (const [kind, keys] of [
    ["redis", `storage: redis\n  url: ${REDIS_URL}`],
    ["upstash", "storage: upstash\n  url_env: UPSTASH_REDIS_REST_URL\n  token_env: UPSTASH_REDIS_REST_TOKEN"],
  ] as const) {
    it(`mycelium.yaml: dispatch_lookup: scan reaches the ${kind} store loadConfig builds`, async () => {
      const callId = `call-py-yaml-${kind}`
      await writePythonRow(`py-row-yaml-${kind}`, callId)
      const dir = mkdtempSync(join(tmpdir(), "mycelium-dispatch-"))
      const yaml = join(dir, "mycelium.yaml")
      writeFileSync(
        yaml,
        `transition:\n  agent_id: interop\n  policy_version: "1"\naction_ledger:\n  ${keys}\n` +
          `  prefix: "${prefix}"\n  dispatch_lookup: scan\n` +
          `tools:\n  send_payment:\n    ledger: true\n    side_effect_class: keyed_mutate\n`,
      )
      const env = {
        UPSTASH_REDIS_REST_URL: process.env.UPSTASH_REDIS_REST_URL ?? "http://127.0.0.1:8079",
        UPSTASH_REDIS_REST_TOKEN: process.env.UPSTASH_REDIS_REST_TOKEN ?? "local-token",
      }
      const config = await loadConfig(yaml, { env })
      let runs = 0
      try {
        const { send_payment } = config.instrument({
          send_payment: async (args: { amount: number; recipient: string }) => {
            runs++
            return { paid: args.amount }
          },
        })
        await expect(
          send_payment({ amount: 999, recipient: "acct_1" }, { toolCallId: callId }),
        ).rejects.toBeInstanceOf(LedgerIdentityConflictError)
        expect(runs).toBe(0)
      } finally {
        await config.close()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  }
})
