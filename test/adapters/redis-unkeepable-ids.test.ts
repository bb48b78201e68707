// Redis keys travel as UTF-8, where an unpaired surrogate becomes U+FFFD: get("fold-\ud800") read the key of the
// request "fold-\ufffd" and failed on its row (a release of it answered as if Redis were down). No row can have such
// an id (writes refuse it), so it names no row.
import { beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { ActionLedger, type LedgerStorage } from "../../src/core/index.ts"
import { AuditReceiptError, hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../../src/receipts.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

beforeAll(requireUpstash)

describe.each([
  [
    "upstash",
    () => new UpstashLedgerStorage({ redis: upstashClient(), prefix: `${runTag("fold")}:action:` }),
  ],
  ["redis (TCP)", () => new RedisLedgerStorage({ url: REDIS_URL, prefix: `${runTag("fold-tcp")}:action:` })],
] as const)("%s: an id with an unpaired surrogate", (_, open) => {
  it("is not read as the U+FFFD id its key would name; a release of it finds no such request", async () => {
    const storage: LedgerStorage = open()
    try {
      await storage.set(newEntry({ requestId: "fold-\ufffd", tool: "pay" }, 1))
      expect((await storage.get("fold-\ufffd"))?.requestId).toBe("fold-\ufffd")
      expect(await storage.get("fold-\ud800")).toBeNull()
      expect(await storage.findByDispatchId?.("call-\udc00")).toEqual([])
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      await expect(
        ledger.release("fold-\ud800", { verified: "not_executed", by: "ops", reason: "checked" }),
      ).rejects.toThrow(expect.objectContaining({ code: "ledger_release_refused" }))
      expect((await storage.get("fold-\ufffd"))?.terminalOutcome).toBe("IN_FLIGHT")
    } finally {
      ;(storage as { close?: () => unknown }).close?.()
    }
  })
})

describe("upstash receipts: a chain named with an unpaired surrogate", () => {
  it("is refused typed before any write: its tail key is the U+FFFD chain's, whose next receipt read as a gap", async () => {
    const store = new UpstashReceiptStore({ redis: upstashClient(), prefix: `${runTag("fold-rcpt")}:` })
    const emit = (agentId: string) =>
      new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId }).emit({
        action: "t",
        actionKind: "task",
        requestId: "x",
        status: "completed",
      })
    await emit("c-\ufffd")
    await expect(emit("c-\ud800")).rejects.toBeInstanceOf(AuditReceiptError)
    await emit("c-\ufffd")
    const chain = await store.list({ ledger: "c-\ufffd" })
    expect(chain.map((r) => r.chain?.seq)).toEqual([0, 1])
    expect(await verifyReceipts(chain, { hmac: "k" }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 2,
    })
    expect(await store.list()).toHaveLength(2)
  })
})
