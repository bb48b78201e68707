// Arguments a model or a bug can produce that cannot be hashed: a cycle, or nesting deeper than the stack. The
// call is refused with the ledger's typed error before anything is claimed, instead of a bare RangeError.
import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerConfigError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { MemoryTaskStore, TaskLedger } from "../../../src/core/tasks/index.ts"
import { RemoteLedger } from "../../../src/edge/client.ts"

async function attempt(args: object) {
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

  it("an invalid Date is refused as the NaN it holds, not as a cycle", async () => {
    const r = await attempt({ at: new Date(Number.NaN) })
    expect(r.error).toBeInstanceOf(LedgerConfigError)
    expect((r.error as Error).message).toMatch(/^arguments hold NaN: not a JSON number/)
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

describe("arguments a plain object cannot stand for", () => {
  class Payment {
    readonly #to: string
    readonly cents: number
    constructor(to: string, cents: number) {
      this.#to = to
      this.cents = cents
    }
    get to() {
      return this.#to
    }
  }

  it("a class instance, a Map, a Set or a list is refused before any claim, not keyed by what it shows", async () => {
    // Before, a class instance keyed as its public fields (here none of the recipient), a Map or Set as
    // "[object Map]": a second, different payment replayed the first one's result and was never made.
    for (const args of [
      new Payment("acct_1", 5),
      { order: new Payment("acct_1", 5) },
      { recipients: new Set(["acct_1"]) },
      { lines: new Map([["a", 1]]) },
      [5, "acct_1"],
    ]) {
      const r = await attempt(args)
      expect(r.error, String(args)).toBeInstanceOf(LedgerConfigError)
      expect(r.error).toMatchObject({
        code: "invalid_option",
        message: expect.stringMatching(/pass a plain object/),
      })
      expect([r.ran, r.rows]).toEqual([0, 0])
    }
    expect(((await attempt({ recipients: new Set() })).error as Error).message).toMatch(
      /^arguments hold a Set/,
    )
    expect(((await attempt([1])).error as Error).message).toMatch(
      /^arguments hold a list: pass a plain object/,
    )
  })

  it("a function or a symbol in the arguments is refused before any claim, not keyed by its text", async () => {
    // Keyed as its source text, a fee of 1% replayed the result of a call with 50%: two closures alike in text.
    const feeOf = (rate: number) => (n: number) => n * rate
    for (const args of [{ fee: feeOf(0.5) }, { nested: [{ fee: feeOf(0.01) }] }, { tag: Symbol("s") }]) {
      const r = await attempt(args)
      expect(r.error).toBeInstanceOf(LedgerConfigError)
      expect(r.error).toMatchObject({
        code: "invalid_option",
        message: expect.stringMatching(/^arguments hold a (Function|Symbol): pass a plain object/),
      })
      expect([r.ran, r.rows]).toEqual([0, 0])
    }
  })

  it("null, a number, a string or a boolean is refused before any claim, not keyed as {}", async () => {
    // Before, a number keyed as {} (charge(5000) replayed charge(100)) and null threw a bare TypeError.
    for (const args of [null, 5000, "refund", true, { toJSON: () => 100 }]) {
      const r = await attempt(args as object)
      expect(r.error, String(args)).toBeInstanceOf(LedgerConfigError)
      expect(r.error).toMatchObject({
        code: "invalid_option",
        message: expect.stringMatching(/pass a plain object/),
      })
      expect([r.ran, r.rows]).toEqual([0, 0])
    }
    expect(((await attempt(null as unknown as object)).error as Error).message).toMatch(
      /^arguments hold a null/,
    )
  })

  it("a call without arguments is keyed as {}, as the original keys f()", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let ran = 0
    const ping = ledger.tool({ name: "ping" }, async () => ++ran) as unknown as (
      a: object | undefined,
      m: object,
    ) => Promise<number>
    expect(await ping(undefined, { toolCallId: "c1" })).toBe(1)
    expect(await ping({}, { toolCallId: "c1" })).toBe(1)
    expect((await ledger.get("c1"))?.kwargs).toEqual({ tool_call_id: "c1" })
    expect(ran).toBe(1)
  })

  it("plain objects, null-prototype objects, dates and values with toJSON still key as before", async () => {
    const bare = Object.assign(Object.create(null) as object, { to: "acct_1" })
    const money = { toJSON: () => "5.00 EUR" }
    for (const args of [{ to: "acct_1", at: new Date(0) }, bare, { amount: money }]) {
      const r = await attempt(args)
      expect(r.error).toBeNull()
      expect([r.ran, r.rows]).toEqual([1, 1])
    }
  })

  it("a task and a remote tool refuse them too", async () => {
    let ran = 0
    const nightly = new TaskLedger({ storage: new MemoryTaskStore() }).task({ name: "nightly" }, async () => {
      ran++
      return "done"
    })
    await expect(nightly({ days: new Set(["mon"]) })).rejects.toBeInstanceOf(LedgerConfigError)
    let requests = 0
    const remote = new RemoteLedger({
      baseUrl: "http://edge.test",
      fetch: async () => {
        requests++
        return new Response(null, { status: 500 })
      },
    })
    const pay = remote.tool({ name: "pay" }, async () => {
      ran++
      return 1
    })
    await expect(pay(new Payment("acct_1", 5), { toolCallId: "c" })).rejects.toBeInstanceOf(LedgerConfigError)
    expect([ran, requests]).toEqual([0, 0])
  })
})
