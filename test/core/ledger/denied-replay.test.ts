// A call a policy predicate denies writes nothing, but it may still be answered by its own earlier call (the original
// decides after its claim): a completed row of the same identity, or an in-flight one once it ends. A row of another
// call at the same request id (another tool, thread or arguments) was handed back as this call's answer.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerPollTimeoutError,
  MemoryLedgerStorage,
} from "../../../src/core/index.ts"

const quiet = { onWarning: () => {} }
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const limit = {
  name: "max_amount",
  check: (i: { args: Record<string, unknown> }) => (i.args.amount as number) <= 1000,
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("a denied call is answered only by its own earlier call", () => {
  it("an explicit request id reused with other arguments is refused, not answered (args drift)", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, ...quiet, predicates: [limit] })
    const pay = ledger.tool({ name: "pay", binding }, async (a: { amount: number }) => ({
      charged: a.amount,
    }))
    expect(await pay({ amount: 10 }, { requestId: "order-42" })).toEqual({ charged: 10 })
    await expect(pay({ amount: 5000 }, { requestId: "order-42" })).rejects.toMatchObject({
      name: "LedgerIdentityConflictError",
      code: "args_drift",
    })
    const hard = new ActionLedger({ storage, ...quiet, predicates: [limit], onArgsDrift: "hard" })
    const pay2 = hard.tool({ name: "pay", binding }, async (a: { amount: number }) => ({ charged: a.amount }))
    const refused = pay2({ amount: 5000 }, { requestId: "order-42" })
    await expect(refused).rejects.toBeInstanceOf(LedgerHardBlockError)
    await expect(refused).rejects.toThrow(/^Args drift/)
  })

  it("a tool-call id of another tool or another thread is refused, not answered with that call's result", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet, predicates: [limit] })
    const lookup = ledger.tool({ name: "lookup_user" }, async (_a: { amount: number }) => ({
      ssn: "123-45-6789",
    }))
    const email = ledger.tool({ name: "send_email" }, async (_a: { amount: number }) => ({ sent: true }))
    await lookup({ amount: 1 }, { toolCallId: "call_0", threadId: "user-A" })
    // One at a time: a second call made before the first's expect would reject with no handler yet.
    for (const denied of [
      () => email({ amount: 99999 }, { toolCallId: "call_0", threadId: "user-A" }),
      () => lookup({ amount: 99999 }, { toolCallId: "call_0", threadId: "user-B" }),
    ]) {
      await expect(denied()).rejects.toBeInstanceOf(LedgerIdentityConflictError)
    }
  })

  it("the same call, completed, still replays its result", async () => {
    let allow = true
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      ...quiet,
      predicates: [{ name: "switch", check: () => allow }],
    })
    let runs = 0
    const pay = ledger.tool({ name: "pay", binding }, async (a: { amount: number }) => ({
      charged: a.amount,
      n: ++runs,
    }))
    await pay({ amount: 10 }, { toolCallId: "c1" })
    allow = false
    expect(await pay({ amount: 10 }, { toolCallId: "c1" })).toEqual({ charged: 10, n: 1 })
    await expect(pay({ amount: 11 }, { toolCallId: "c2" })).rejects.toThrow("decision denied")
  })

  it("the same call in flight, denied by the spend it made itself, waits for it and answers its result", async () => {
    let reads = 0
    class Counted extends MemoryLedgerStorage {
      override async get(id: string) {
        reads++
        return super.get(id)
      }
    }
    const storage = new Counted()
    let spent = 0
    const ledger = new ActionLedger({
      storage,
      ...quiet,
      pollInterval: 0.005,
      predicates: [{ name: "budget", check: (i) => spent + (i.args.amount as number) <= 100 }],
    })
    let runs = 0
    let release = () => {}
    const pay = ledger.tool({ name: "pay", binding }, async (a: { amount: number }) => {
      runs++
      spent += a.amount
      await new Promise<void>((r) => {
        release = r
      })
      return { charged: a.amount }
    })
    const first = pay({ amount: 60 }, { toolCallId: "c1" })
    while (runs === 0) await sleep(1)
    // A redispatch of the same call while it runs: the budget now counts its own spend.
    const redispatch = pay({ amount: 60 }, { toolCallId: "c1" })
    const seen = reads
    // It read the in-flight row and polled it once (bounded: a call that threw at once must not hang the test).
    for (let i = 0; reads < seen + 2 && i < 500; i++) await sleep(1)
    release()
    expect(await redispatch).toEqual({ charged: 60 })
    expect(await first).toEqual({ charged: 60 })
    expect(runs).toBe(1)
  })

  it("a denied call waits no longer than pollTimeout for the same call in flight", async () => {
    const storage = new MemoryLedgerStorage()
    let release = (_v: number) => {}
    let started = false
    const hold = new ActionLedger({ storage, ...quiet }).tool(
      { name: "pay", binding },
      (_a: { amount: number }) =>
        new Promise<number>((r) => {
          release = r
          started = true
        }),
    )
    const running = hold({ amount: 5 }, { toolCallId: "c9" })
    while (!started) await sleep(1)
    const denied = new ActionLedger({
      storage,
      ...quiet,
      pollInterval: 0.005,
      pollTimeout: 0.03,
      predicates: [{ name: "no", check: () => false }],
    }).tool({ name: "pay", binding }, async (a: { amount: number }) => a.amount)
    await expect(denied({ amount: 5 }, { toolCallId: "c9" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    release(5)
    expect(await running).toBe(5)
  })

  it("the same call failed before its effect: the denial stands and writes nothing", async () => {
    let allow = true
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      ...quiet,
      predicates: [{ name: "switch", check: () => allow }],
    })
    const pay = ledger.tool({ name: "pay", binding }, async (_a: { amount: number }) => {
      throw new Error("card declined")
    })
    await expect(pay({ amount: 10 }, { requestId: "r1" })).rejects.toThrow("card declined")
    const before = await ledger.get("r1")
    allow = false
    await expect(pay({ amount: 10 }, { requestId: "r1" })).rejects.toThrow("decision denied for 'r1'")
    expect(await ledger.get("r1")).toEqual(before)
  })
})
