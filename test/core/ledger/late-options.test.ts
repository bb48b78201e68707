// Options checked once but read later, or never checked: an owner that is not a string (its completion write was
// refused as another worker's, so a paid call stayed IN_FLIGHT), a tool's options object changed after tool()
// (a NaN lease never lapsed), and listTransitions() filters no row can match (it answered "nothing is stuck").

import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerConfigError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const quiet = { onWarning: () => {} }

function refusal(make: () => unknown): LedgerConfigError {
  try {
    make()
  } catch (e) {
    expect(e).toBeInstanceOf(LedgerConfigError)
    return e as LedgerConfigError
  }
  throw new Error("not refused")
}

describe("ActionLedger owner", () => {
  for (const owner of [process.pid, "", { id: "w1" }]) {
    it(`${JSON.stringify(owner)} is refused at construction with invalid_option`, () => {
      const e = refusal(() => new ActionLedger({ ...quiet, owner: owner as unknown as string }))
      expect(e.code).toBe("invalid_option")
      expect(e.message).toMatch(/owner.*string/)
    })
  }

  it("a string owner is kept", () => {
    expect(new ActionLedger({ ...quiet, owner: "w1" }).owner).toBe("w1")
  })
})

describe("ledger.tool() options", () => {
  it("are copied when the tool is made: a later change to the caller's object is not read", async () => {
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ ...quiet, clock, storage: new MemoryLedgerStorage() })
    const opts: { name: string; binding: typeof binding; leaseTtl: unknown } = {
      name: "charge",
      binding,
      leaseTtl: 30,
    }
    const seen: unknown[] = []
    const charge = ledger.tool(opts as { name: string; leaseTtl: number }, async (_a: { n: number }, tx) => {
      seen.push(tx.entry.leaseUntil)
      return "ok"
    })
    opts.leaseTtl = Number.NaN
    await charge({ n: 1 }, { toolCallId: "c1" })
    opts.leaseTtl = "30"
    await charge({ n: 2 }, { toolCallId: "c2" })
    expect(seen).toEqual([1030, 1030])
  })

  it("a pollTimeout changed after tool() does not stretch a redispatch's wait", async () => {
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ ...quiet, clock, leaseTtl: 0 })
    const opts = { name: "hang", binding, pollInterval: 1, pollTimeout: 5 as number | null }
    let release = () => {}
    const gate = new Promise<void>((r) => {
      release = r
    })
    const hang = ledger.tool(opts, async () => {
      await gate
      return "done"
    })
    const first = hang({}, { toolCallId: "c1" })
    await new Promise((r) => setTimeout(r, 10))
    opts.pollTimeout = 1000
    const start = clock.now()
    await expect(hang({}, { toolCallId: "c1" })).rejects.toMatchObject({ code: "ledger_poll_timeout" })
    expect(clock.now() - start).toBeLessThan(10)
    release()
    await first
  })
})

describe("ledger.tool() options read from a prototype or a getter", () => {
  it("keep their binding and name: one payment per order_id, rows named by the getter", async () => {
    // The copy was a spread, which drops inherited fields: the payment ran unclassified, keyed per call id.
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    const defaults = {
      binding: { ...binding, sideEffectClass: "payment", requestIdFrom: "order_id" },
      leaseTtl: 60,
    }
    let runs = 0
    const pay = ledger.tool(
      Object.assign(Object.create(defaults), { name: "send_payment" }),
      async () => ++runs,
    )
    expect(pay.binding?.requestIdFrom).toBe("order_id")
    await pay({ order_id: "o1" }, { toolCallId: "c1" })
    await pay({ order_id: "o1" }, { toolCallId: "c2" })
    expect(runs).toBe(1)
    class Named {
      get name() {
        return "refund"
      }
    }
    const refund = ledger.tool(new Named(), async () => 1)
    expect(refund.toolName).toBe("refund")
    await refund({}, { toolCallId: "r1" })
    expect((await ledger.listTransitions()).map((e) => e.tool).sort()).toEqual(["refund", "send_payment"])
  })
})

describe("listTransitions() filters", () => {
  it("an outcome that is not one, or stuck seconds that are not a finite number >= 0, are refused", async () => {
    const ledger = new ActionLedger(quiet)
    for (const [filter, name] of [
      [{ outcome: "unknown" }, /outcome must be one of .*UNKNOWN/],
      [
        { stuck: true, inFlightStuckAfter: Number.NaN },
        /inFlightStuckAfter must be a finite number of seconds >= 0/,
      ],
      [{ inFlightStuckAfter: -1 }, /inFlightStuckAfter/],
      [{ inFlightStuckAfter: "60" }, /inFlightStuckAfter/],
    ] as const) {
      const e = await ledger.listTransitions(filter as never).then(
        () => null,
        (err: LedgerConfigError) => err,
      )
      expect(e).toBeInstanceOf(LedgerConfigError)
      expect(e?.code).toBe("invalid_option")
      expect(e?.message).toMatch(name)
    }
  })

  it("valid filters still list what they select", async () => {
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ ...quiet, clock, leaseTtl: 0 })
    const pay = ledger.tool({ name: "pay", binding }, async (_a: object, tx) =>
      tx.sideEffect(async () => {
        throw new Error("timeout")
      }),
    )
    await pay({}, { toolCallId: "c1" }).catch(() => {})
    const hang = ledger.tool({ name: "hang", binding }, () => new Promise<never>(() => {}))
    void hang({}, { toolCallId: "c2" })
    await new Promise((r) => setTimeout(r, 10))
    clock.advance(60)
    const tools = async (o: object) => (await ledger.listTransitions(o)).map((r) => r.tool)
    expect(await tools({ outcome: "UNKNOWN" })).toEqual(["pay"])
    expect(await tools({ stuck: true })).toEqual(["pay"])
    expect(await tools({ stuck: true, inFlightStuckAfter: 0 })).toEqual(["pay", "hang"])
  })
})
