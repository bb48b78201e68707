// The Redis stores' scripts decode a stored row with Lua's cjson, which stops at 1,000 levels. Arguments nested
// that deep were claimed (the claim script never decodes the new row), the body ran, and the completion script
// could not decode the row: it stayed IN_FLIGHT and every call of that id failed as if Redis were down.
import { beforeAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { ActionLedger, LedgerConfigError, type LedgerStorage } from "../../src/core/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const BINDING = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } as const

beforeAll(requireUpstash)

const nested = (levels: number): unknown => {
  let v: unknown = "leaf"
  for (let i = 0; i < levels; i++) v = [v]
  return v
}

describe.each([
  [
    "upstash",
    () => new UpstashLedgerStorage({ redis: upstashClient(), prefix: `${runTag("deep")}:action:` }),
  ],
  ["redis (TCP)", () => new RedisLedgerStorage({ url: REDIS_URL, prefix: `${runTag("deep-tcp")}:action:` })],
] as const)("%s: arguments nested past the scripts' depth", (_, open) => {
  it("are refused before the claim (LedgerConfigError); the body never runs, and a shallower call runs once", async () => {
    const storage: LedgerStorage = open()
    try {
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      let runs = 0
      const charge = ledger.tool({ name: "charge", binding: BINDING }, async () => {
        runs++
        return "charged"
      })
      const id = runTag("deep-args")
      for (let i = 0; i < 2; i++)
        await expect(charge({ memo: nested(1000) }, { requestId: id })).rejects.toBeInstanceOf(
          LedgerConfigError,
        )
      expect(runs).toBe(0)
      expect(await storage.get(id)).toBeNull()
      const ok = runTag("shallow-args")
      expect(await charge({ memo: nested(800) }, { requestId: ok })).toBe("charged")
      expect(await charge({ memo: nested(800) }, { requestId: ok })).toBe("charged")
      expect(runs).toBe(1)
    } finally {
      ;(storage as { close?: () => unknown }).close?.()
    }
  })
})
