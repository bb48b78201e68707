// A receipt Postgres refuses is refused by the receipt store, typed, after the ledger wrote the outcome: the row is
// final (never stranded in flight), the call reports the missing receipt, and a retry replays without running.
// Before, a chain named with U+0000 failed with Postgres's own error (22021) and an unpaired surrogate with 22P02.
import { describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { ActionLedger, ReceiptAppendError } from "../../src/core/index.ts"
import { TaskLedger } from "../../src/core/tasks/index.ts"
import { AuditReceiptError, hmacReceiptSigner, ReceiptEmitter } from "../../src/receipts.ts"
import { runTag } from "./servers/env.ts"
import { neonTables } from "./servers/neon-tables.ts"

const { pool, table, tasksTable, receiptsTable } = neonTables("rkeys")

const missingReceipt = (requestId: string) =>
  expect.objectContaining({
    code: "receipt_append_failed",
    requestId,
    cause: expect.any(AuditReceiptError),
    message: expect.stringMatching(/U\+0000 or an unpaired surrogate, which Postgres cannot keep/),
  })

// The chain defaults to the agent id, so an agent named so chains every receipt under a name Postgres refuses.
describe.each(["pay-\u0000", "pay-\ud800"])("neon receipts, agent and chain %j", (agentId) => {
  const receipts = () =>
    new ReceiptEmitter({
      signer: hmacReceiptSigner("k"),
      store: new NeonReceiptStore({ pool, table: receiptsTable }),
      agentId,
    })
  const stored = async () =>
    (await new NeonReceiptStore({ pool, table: receiptsTable }).list()).filter((r) => r.agent_id === agentId)

  it("a tool call completes once; the caller is told its receipt is missing, and a retry replays", async () => {
    const storage = new NeonLedgerStorage({ pool, table })
    const ledger = new ActionLedger({ storage, receipts: receipts(), onWarning: () => {} })
    let runs = 0
    const charge = ledger.tool(
      { name: "charge", binding: { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } },
      async (a: { n: number }) => {
        runs++
        return { charged: a.n }
      },
    )
    const requestId = runTag(`charge-${agentId.codePointAt(4)}`)
    const err = await charge({ n: 5 }, { requestId }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ReceiptAppendError)
    expect(err).toEqual(missingReceipt(requestId))
    const row = await storage.get(requestId)
    expect(row).toMatchObject({ terminalOutcome: "COMPLETED", result: { charged: 5 } })
    expect(row?.receiptRef).toBe((err as ReceiptAppendError).receiptId)
    expect(await charge({ n: 5 }, { requestId })).toEqual({ charged: 5 })
    expect(runs).toBe(1)
    expect(await stored()).toEqual([])
  })

  it("a task completes once; the caller is told its receipt is missing, and a retry replays", async () => {
    const tasks = new TaskLedger({
      storage: new NeonTaskStore({ pool, table: tasksTable }),
      receipts: receipts(),
      onWarning: () => {},
    })
    let runs = 0
    const job = tasks.task({ name: "job" }, async () => ++runs)
    const taskId = runTag(`job-${agentId.codePointAt(4)}`)
    await expect(job({}, { taskId })).rejects.toEqual(missingReceipt(taskId))
    expect((await tasks.get(taskId))?.row).toMatchObject({ status: "completed", result: 1 })
    expect(await job({}, { taskId })).toBe(1)
    expect(runs).toBe(1)
    expect(await stored()).toEqual([])
  })
})
