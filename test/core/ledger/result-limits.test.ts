import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerResultUnstorableError,
  MemoryLedgerStorage,
} from "../../../src/core/ledger/index.ts"
import { jsonDepth } from "../../../src/core/storage/limits.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const nested = (depth: number): unknown => {
  let v: unknown = 1
  for (let i = 0; i < depth; i++) v = [v]
  return v
}

function setup() {
  // The limits SQLite puts on a Durable Object row: 2 MB, JSON nested at most 1000 deep.
  const storage = new MemoryLedgerStorage({ limits: { maxRowBytes: 2_000_000, maxDepth: 1000 } })
  const warnings: string[] = []
  const ledger = new ActionLedger({ storage, onWarning: (m) => warnings.push(m) })
  return { storage, ledger, warnings }
}

async function rows(storage: MemoryLedgerStorage) {
  const out = []
  for await (const e of storage.list()) out.push(e)
  return out
}

describe("a result the store cannot hold", () => {
  it("the store with limits refuses such a row itself (so the check below is what saves the row)", async () => {
    const { storage, ledger } = setup()
    const raw = new ActionLedger({ storage, onWarning: () => {} })
    await expect(
      storage.set({
        ...(await raw.claim({ tool: "t", requestId: "x" })).entry,
        result: nested(1200) as never,
      }),
    ).rejects.toThrow(/deeper/)
    expect(ledger).toBeDefined()
  })

  for (const [label, make, limit] of [
    ["3 MB", () => "x".repeat(3 * 1024 * 1024), "max_row_bytes"],
    ["nested 1,200 deep", () => nested(1200), "max_depth"],
    [
      "a cycle",
      () => {
        const o: Record<string, unknown> = {}
        o.self = o
        return o
      },
      "not_serializable",
    ],
  ] as const) {
    it(`${label}: no IN_FLIGHT row, one run, replay raises naming the limit`, async () => {
      const { storage, ledger, warnings } = setup()
      let runs = 0
      const tool = ledger.tool({ name: "big", binding }, async (_a, tx) =>
        tx.sideEffect(async () => {
          runs++
          return make()
        }),
      )
      const first = await tool({ n: 1 }, { toolCallId: "c1" })
      expect(first).toBeDefined()
      const all = await rows(storage)
      expect(all.map((r) => r.terminalOutcome)).toEqual(["COMPLETED"])
      expect(all[0]?.result).toBeNull()
      expect(warnings.join("\n")).toContain("was not stored")
      const again = tool({ n: 1 }, { toolCallId: "c1" })
      await expect(again).rejects.toBeInstanceOf(LedgerResultUnstorableError)
      await expect(tool({ n: 1 }, { toolCallId: "c1" })).rejects.toMatchObject({ limit })
      expect(runs).toBe(1)
    })
  }

  it("a result within the limits is stored and replayed as usual", async () => {
    const { ledger } = setup()
    let runs = 0
    const tool = ledger.tool({ name: "ok", binding }, async () => {
      runs++
      return nested(900)
    })
    expect(jsonDepth(await tool({}, { toolCallId: "c" }))).toBe(900)
    expect(jsonDepth(await tool({}, { toolCallId: "c" }))).toBe(900)
    expect(runs).toBe(1)
  })
})
