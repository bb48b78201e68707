// Ids Postgres cannot hold (U+0000, an unpaired surrogate) name no row: reading one, or releasing it, answered as if
// Postgres were down (LedgerStorageUnavailableError, TaskStoreUnavailableError) where "no such row" is the truth.
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { TaskLedger } from "../../src/core/tasks/index.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../src/receipts.ts"
import { neonTables } from "./servers/neon-tables.ts"

const { pool, table, tasksTable, receiptsTable } = neonTables("ids")

describe("neon: ids Postgres cannot hold name no row", () => {
  for (const id of ["pay-\u0000", "pay-\ud800"]) {
    it(`${JSON.stringify(id)}: get() is null, findByDispatchId() empty, release() refuses it as no such request`, async () => {
      const storage = new NeonLedgerStorage({ pool, table })
      expect(await storage.get(id)).toBeNull()
      expect(await storage.findByDispatchId(id)).toEqual([])
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      await expect(
        ledger.release(id, { verified: "not_executed", by: "ops", reason: "checked" }),
      ).rejects.toThrow(
        expect.objectContaining({
          code: "ledger_release_refused",
          message: expect.stringMatching(/no such request/),
        }),
      )
    })

    it(`${JSON.stringify(id)}: the task store's get() and the task ledger's are null`, async () => {
      const store = new NeonTaskStore({ pool, table: tasksTable })
      expect(await store.get(id)).toBeNull()
      expect(await new TaskLedger({ storage: store, onWarning: () => {} }).get(id)).toBeNull()
    })
  }

  it("an unpaired surrogate is not read as the U+FFFD id the driver would send (another request's row)", async () => {
    const storage = new NeonLedgerStorage({ pool, table })
    await storage.set(newEntry({ requestId: "fold-\ufffd", tool: "pay" }, 1))
    expect((await storage.get("fold-\ufffd"))?.requestId).toBe("fold-\ufffd")
    expect(await storage.get("fold-\ud800")).toBeNull()
  })
})

describe("neon receipts: the agent_id column holds what the driver sent", () => {
  it("an unchained receipt of agent 'r-\\ud800' (its record keeps it) is never a page of agent 'r-\\ufffd'", async () => {
    const store = new NeonReceiptStore({ pool, table: receiptsTable })
    for (const agentId of ["r-\ufffd", "r-\ud800"]) {
      const e = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId, chain: false })
      await e.emit({ action: "t", actionKind: "task", requestId: "x", status: "completed" })
    }
    for (const agentId of ["r-\ufffd", "r-\ud800"]) {
      expect((await store.list({ agentId })).map((r) => r.agent_id)).toEqual([agentId])
      expect((await store.listPage({ agentId })).receipts.map((r) => r.agent_id)).toEqual([agentId])
    }
  })
})
