// Arguments a model or a bug can produce that cannot be hashed: a cycle, or nesting deeper than the stack. The
// call is refused with the ledger's typed error before anything is claimed, instead of a bare RangeError.
import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerConfigError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { MemoryTaskStore, TaskLedger } from "../../../src/core/tasks/index.ts"

async function attempt(args: Record<string, unknown>) {
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  let ran = 0
  const pay = ledger.tool(
    { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
    async () => {
      ran++
      return "paid"
    },
  )
  const error = await pay(args, { toolCallId: "call-1" }).then(
    () => null,
    (e: unknown) => e,
  )
  const rows = []
  for await (const row of storage.list()) rows.push(row)
  return { error, ran, rows: rows.length }
}

describe("arguments that cannot be hashed", () => {
  it("a cycle is invalid_option before any claim; the body does not run", async () => {
    const args: Record<string, unknown> = { amount: 5 }
    args.self = args
    const r = await attempt(args)
    expect(r.error).toBeInstanceOf(LedgerConfigError)
    expect(r.error).toMatchObject({ code: "invalid_option" })
    expect([r.ran, r.rows]).toEqual([0, 0])
  })

  it("nesting deeper than the stack is invalid_option too, with the RangeError as its cause", async () => {
    let deep: unknown = 1
    for (let i = 0; i < 200_000; i++) deep = [deep]
    const r = await attempt({ deep })
    expect(r.error).toBeInstanceOf(LedgerConfigError)
    expect((r.error as Error).cause).toBeInstanceOf(RangeError)
    expect([r.ran, r.rows]).toEqual([0, 0])
  })

  it("a task's cyclic arguments are refused the same way; its body does not run", async () => {
    let ran = 0
    const nightly = new TaskLedger({ storage: new MemoryTaskStore() }).task({ name: "nightly" }, async () => {
      ran++
      return "done"
    })
    const args: Record<string, unknown> = { day: "d" }
    args.self = args
    const error = await nightly(args).then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(LedgerConfigError)
    expect(ran).toBe(0)
  })
})
