// A hostile review of the task ledger: bodies that throw garbage or return what JSON cannot hold, operators who send
// wrong fields, callers who craft arguments so two different tasks share one request id, and cancellation.
import { describe, expect, it } from "vitest"
import { ManualClock } from "../../../src/core/index.ts"
import {
  deriveTaskRequestId,
  MemoryTaskStore,
  TaskLedger,
  TaskLedgerError,
  type TaskLedgerOptions,
  TaskReleaseRefusedError,
} from "../../../src/tasks.ts"

const ledgerOn = (extra: TaskLedgerOptions = {}) =>
  new TaskLedger({ storage: new MemoryTaskStore(), leaseRenewInterval: 0, onWarning: () => {}, ...extra })

describe("a body that throws something that is not an Error", () => {
  for (const [name, make] of [
    ["an object without a prototype", () => Object.create(null)],
    [
      "an object whose toString throws",
      () => ({
        toString() {
          throw new Error("no")
        },
      }),
    ],
  ] as const) {
    it(`${name}: the task is recorded failed (not left in flight) and a retry runs it`, async () => {
      const clock = new ManualClock()
      const ledger = ledgerOn({ clock, leaseTtl: 3600 })
      let runs = 0
      const t = ledger.task("flaky", async () => {
        if (++runs === 1) throw make()
        return "ok"
      })
      await expect(t({ n: 1 })).rejects.toBeDefined()
      const [row] = await ledger.list()
      expect(row?.row.status).toBe("failed")
      expect(typeof row?.row.error).toBe("string")
      // No lease expiry needed: a failed task re-runs at once.
      await expect(t({ n: 1 })).resolves.toBe("ok")
      expect(runs).toBe(2)
    })
  }
})
