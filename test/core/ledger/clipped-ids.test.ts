// A requestIdFrom key is the model's own argument, and the ledger's refusals quote the request id: a 1 MB argument
// put 1 MB into each of them (and, through the integrations, into the model's next turn). They quote it clipped;
// the row, the key and an error's own id fields keep it whole.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type ActionLedgerOptions,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReceiptUnsignedError,
  LedgerResultUnstorableError,
  LedgerSoftBlockError,
  MemoryLedgerStorage,
  ReceiptAppendError,
  type SideEffectClass,
} from "../../../src/core/index.ts"

const value = `o-1${"x".repeat(1024 * 1024)}`
const id = `pay:orderId:${value}`
/** The id as the messages quote it: its first 300 characters, then `...`. */
const shown = `${id.slice(0, 300)}...`
const binding = (sideEffectClass: SideEffectClass) => ({
  agentId: "billing",
  policyVersion: "1",
  sideEffectClass,
  requestIdFrom: "orderId",
})

function setup(sideEffectClass: SideEffectClass, options: ActionLedgerOptions = {}) {
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, onWarning: () => {}, ...options })
  let runs = 0
  const pay = ledger.tool(
    { name: "pay", binding: binding(sideEffectClass) },
    async (a: { orderId: string; amount?: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        if (a.amount === 0) throw new Error("gateway reset")
        return { paid: a.amount }
      }),
  )
  return { storage, ledger, pay, runs: () => runs }
}

const failure = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => {
      throw new Error("expected a refusal")
    },
    (e: unknown) => e as Error,
  )

/** Under a few KB (before: over 1 MB), naming the tool and the field, the id quoted clipped. */
function expectClipped(e: Error, quoted = shown, count = 1) {
  expect(e.message.length).toBeLessThan(2000)
  expect(e.message.split(quoted)).toHaveLength(count + 1)
}

describe("a 1 MB requestIdFrom value is quoted clipped", () => {
  it("the hard block of an ambiguous call; the row keeps the whole id", async () => {
    const { ledger, pay, runs } = setup("keyed_mutate")
    await expect(pay({ orderId: value, amount: 0 })).rejects.toThrow("gateway reset")
    const e = await failure(pay({ orderId: value, amount: 0 }))
    expect(e).toBeInstanceOf(LedgerHardBlockError)
    expectClipped(e, `request '${shown}' is UNKNOWN`)
    expect(e.message).toMatch(/manual reconciliation required$/)
    expect([runs(), (await ledger.get(id))?.requestId === id]).toEqual([1, true])
  })

  it("the soft block of a deferred read", async () => {
    const { storage, pay } = setup("read")
    await expect(pay({ orderId: value, amount: 0 })).rejects.toThrow("gateway reset")
    const defer = new ActionLedger({ storage, deferReadOnlyUnknown: true, onWarning: () => {} })
    const read = defer.tool({ name: "pay", binding: binding("read") }, async () => 1)
    const e = await failure(read({ orderId: value, amount: 0 }))
    expect(e).toBeInstanceOf(LedgerSoftBlockError)
    expectClipped(e, `request '${shown}' is UNKNOWN: safe to defer`)
  })

  it("args drift: both ids clipped in the text, whole in the conflict's fields", async () => {
    const { storage, pay, runs } = setup("keyed_mutate")
    await pay({ orderId: value, amount: 1 })
    const soft = await failure(pay({ orderId: value, amount: 2 }))
    expect(soft).toBeInstanceOf(LedgerIdentityConflictError)
    expectClipped(soft, `request_id='${shown}'`, 2)
    const conflict = soft as LedgerIdentityConflictError
    expect([conflict.requestId === id, conflict.priorRequestId === id]).toEqual([true, true])

    const hard = new ActionLedger({ storage, onArgsDrift: "hard", onWarning: () => {} })
    const e = await failure(
      hard.tool(
        { name: "pay", binding: binding("keyed_mutate") },
        async () => 3,
      )({ orderId: value, amount: 3 }),
    )
    expect(e).toBeInstanceOf(LedgerHardBlockError)
    expectClipped(e, `request_id='${shown}'`, 2)
    expect(runs()).toBe(1)
  })

  it("a denial by a policy predicate; an id of 300 characters is quoted whole", async () => {
    const { pay, runs } = setup("keyed_mutate", { predicates: [{ name: "no", check: () => false }] })
    const e = await failure(pay({ orderId: value, amount: 1 }))
    expect(e).toBeInstanceOf(LedgerHardBlockError)
    expectClipped(e, `decision denied for '${shown}': no: policy predicate refused`)
    const whole = "x".repeat(300 - "pay:orderId:".length)
    await expect(pay({ orderId: whole, amount: 1 })).rejects.toThrow(
      `decision denied for 'pay:orderId:${whole}': no: policy predicate refused`,
    )
    expect(runs()).toBe(0)
  })

  it("a poll that timed out on the call in flight", async () => {
    const { ledger, pay } = setup("keyed_mutate", { pollTimeout: 0.05, pollInterval: 0.005 })
    let release = () => {}
    const held = ledger.tool({ name: "pay", binding: binding("keyed_mutate") }, async () => {
      await new Promise<void>((r) => {
        release = r
      })
      return { paid: 1 }
    })
    const running = held({ orderId: value, amount: 1 })
    const e = await failure(pay({ orderId: value, amount: 1 }))
    release()
    expect(await running).toEqual({ paid: 1 })
    expect(e).toBeInstanceOf(LedgerPollTimeoutError)
    expectClipped(e, `request '${shown}'; retry later`)
  })

  it("the replay of a result the store could not keep", async () => {
    const { ledger } = setup("keyed_mutate")
    const cyclic = ledger.tool({ name: "pay", binding: binding("keyed_mutate") }, async () => {
      const o: Record<string, unknown> = {}
      o.self = o
      return o
    })
    await cyclic({ orderId: value })
    const e = await failure(cyclic({ orderId: value }))
    expect(e).toBeInstanceOf(LedgerResultUnstorableError)
    expectClipped(e, `request '${shown}' completed`)
  })

  // Thrown from a tool body too (tx.sideEffect() after the lease lapsed; a receipt store or signer outage).
  it("the write of a holder whose lease lapsed before its effect; the receipt errors", async () => {
    let t = 1000
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      clock: { now: () => t },
      leaseTtl: 10,
      onWarning: () => {},
    })
    let runs = 0
    const pay = ledger.tool(
      { name: "pay", binding: binding("keyed_mutate") },
      async (_a: { orderId: string }, tx) => {
        t += 20
        return tx.sideEffect(async () => ++runs)
      },
    )
    const e = await failure(pay({ orderId: value }))
    expect(e).toBeInstanceOf(LedgerOutcomeAlreadySetError)
    expectClipped(e, `Cannot advance boundary request '${shown}': stored outcome is EXPIRED`)
    expect(runs).toBe(0)
    expectClipped(new ReceiptAppendError(id, "rcpt-1", new Error("down")), `Request '${shown}' is recorded`)
    expectClipped(new LedgerReceiptUnsignedError(id, new Error("down")), `Request '${shown}' is recorded`)
    expect(new ReceiptAppendError(id, "rcpt-1", null).requestId).toBe(id)
  })
})
