// Options a task ledger is given are checked and copied when it is built: a non-string owner, an idFrom that is one
// name instead of a list, and options changed afterwards (to values the checks would have refused).
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import { MemoryTaskStore, TaskLedger, TaskLedgerPendingError, type TaskOptions } from "../../../src/tasks.ts"
import { ManualClock } from "../../../src/testing.ts"

describe("TaskLedger options", () => {
  it("refuses an owner that is not a non-empty string (process.pid lost completions)", () => {
    for (const owner of [12345, ""])
      expect(() => new TaskLedger({ owner: owner as unknown as string })).toThrow(InvalidOptionError)
    expect(() => new TaskLedger({ owner: 42 as unknown as string })).toThrow(/owner/)
    expect(new TaskLedger({ owner: "w1" }).owner).toBe("w1")
  })

  it("refuses idFrom given as one name at task(), not as a TypeError on every call", () => {
    const ledger = new TaskLedger({ onWarning: () => {} })
    const bad = { name: "ship", idFrom: "order_id" } as unknown as TaskOptions
    expect(() => ledger.task(bad, async () => 1)).toThrow(InvalidOptionError)
    expect(() => ledger.task(bad, async () => 1)).toThrow(/idFrom takes a list of field names/)
  })

  type Mutable = { -readonly [K in keyof TaskOptions]: TaskOptions[K] }
  const ledgerOn = (clock: ManualClock, storage = new MemoryTaskStore()) =>
    new TaskLedger({ storage, clock, leaseRenewInterval: 0, onWarning: () => {} })

  it("waits the pollTimeout checked at task(), not one changed to NaN afterwards (it waited forever)", async () => {
    const clock = new ManualClock()
    const store = new MemoryTaskStore()
    const opts: Mutable = { name: "slow", wait: true, pollTimeout: 1 }
    const slow = ledgerOn(clock, store).task(opts, async () => 1)
    let release!: () => void
    const first = ledgerOn(clock, store).task(
      "slow",
      () => new Promise<number>((r) => (release = () => r(2))),
    )({
      k: 1,
    })
    await new Promise((r) => setTimeout(r, 0))
    opts.pollTimeout = Number.NaN
    const hung = new Promise((r) => setTimeout(() => r("still waiting"), 1000))
    const second = slow({ k: 1 }).then(
      () => "returned",
      (e: unknown) => e,
    )
    expect(await Promise.race([second, hung])).toBeInstanceOf(TaskLedgerPendingError)
    release()
    await first
  })

  it("keys calls by the name and idFrom given to task(), not as changed afterwards", async () => {
    const ledger = ledgerOn(new ManualClock())
    const idFrom = ["order_id"]
    const opts: Mutable = { name: "ship", idFrom }
    const ship = ledger.task(opts, async (a: { order_id: string }) => a.order_id)
    opts.name = "renamed"
    idFrom[0] = "other"
    expect(await ship({ order_id: "o1" })).toBe("o1")
    expect((await ledger.list()).map((t) => t.row.request_id)).toEqual(["ship:order_id=o1"])
    expect(ship.taskName).toBe("ship")
  })
})
