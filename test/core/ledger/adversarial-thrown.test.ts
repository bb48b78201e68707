// A ledgered tool that throws a value String() cannot convert: the failure must still be recorded, and the caller
// must get the tool's own throw, not a TypeError from the ledger's bookkeeping.

import { describe, expect, it } from "vitest"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "read" } as const

describe("a tool that throws something String() cannot convert", () => {
  for (const [name, make] of [
    ["an object without a prototype", () => Object.create(null) as object],
    [
      "an object whose toString throws",
      () => ({
        toString(): string {
          throw new Error("no")
        },
      }),
    ],
  ] as const) {
    it(`${name}: the row is terminal, the caller gets the tool's throw, and a retry runs the tool`, async () => {
      const storage = new MemoryLedgerStorage()
      const ledger = new ActionLedger({
        storage,
        clock: new ManualClock(),
        leaseTtl: 3600,
        onWarning: () => {},
      })
      const thrown = make()
      let runs = 0
      const tool = ledger.tool({ name: "lookup", binding }, async () => {
        if (++runs === 1) throw thrown
        return "ok"
      })
      const err = await tool({ q: 1 }, { requestId: "lookup:1" }).catch((e: unknown) => e)
      expect(err).toBe(thrown)
      const row = await storage.get("lookup:1")
      expect(row?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
      expect(await tool({ q: 1 }, { requestId: "lookup:1" })).toBe("ok")
      expect(runs).toBe(2)
    })
  }
})
