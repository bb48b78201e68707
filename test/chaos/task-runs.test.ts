// The task chaos's verdicts on hand-made logs: which late starts and overlaps a SIGSTOP excuses, and which it does not.
import { describe, expect, it } from "vitest"
import { type Fate, frozenBeforeStart, overlaps, type Run, type RunLog } from "./task-runs.ts"

const run = (owner: string, fence: number, start: number, end: number): Run => ({
  id: "tchaos:0",
  owner,
  fence,
  start,
  end,
  ended: "done",
  signalled: false,
})
const logOf = (...runs: Run[]): RunLog => ({ runs: new Map([["tchaos:0", runs]]), late: 0, orphans: [] })
const fatesOf = (stalls: Record<string, { from: number; to: number }[]>): Map<string, Fate> =>
  new Map(Object.entries(stalls).map(([owner, s]) => [owner, { stalls: s }]))

describe("task chaos verdicts", () => {
  // tw1 claimed fence 1 at 1,000 ms; tw2 took over at 2,000 and completed at 2,200; tw1's start line came at 2,600.
  const stale = run("tw1", 1, 2_600, 2_800)
  const winner = run("tw2", 2, 2_000, 2_200)

  it("excuses a start after the takeover when its owner was frozen from before the takeover until that start", () => {
    const fates = fatesOf({ tw1: [{ from: 1_100, to: 2_590 }], tw2: [] })
    expect(frozenBeforeStart(stale, winner, fates)).toBe(true)
    expect(overlaps(logOf(stale, winner), fates).map((o) => o.excused)).toEqual([true])
  })

  it("flags the same late start when its owner was never stopped", () => {
    const fates = fatesOf({ tw1: [], tw2: [] })
    expect(frozenBeforeStart(stale, winner, fates)).toBe(false)
    expect(overlaps(logOf(stale, winner), fates).map((o) => o.excused)).toEqual([false])
  })

  it("flags it when the owner woke well before the takeover began: it started late on its own", () => {
    const fates = fatesOf({ tw1: [{ from: 200, to: 1_500 }], tw2: [] })
    expect(frozenBeforeStart(stale, winner, fates)).toBe(false)
    expect(overlaps(logOf(stale, winner), fates).map((o) => o.excused)).toEqual([false])
  })

  it("flags it when the owner was stopped only after the takeover began", () => {
    const fates = fatesOf({ tw1: [{ from: 2_100, to: 2_590 }], tw2: [] })
    expect(frozenBeforeStart(stale, winner, fates)).toBe(false)
    expect(overlaps(logOf(stale, winner), fates).map((o) => o.excused)).toEqual([false])
  })

  it("excuses a holder stalled while its body ran, and no holder that was not", () => {
    const holder = run("tw1", 1, 1_000, 3_000)
    const taker = run("tw2", 2, 2_300, 2_500)
    expect(overlaps(logOf(holder, taker), fatesOf({ tw1: [{ from: 1_050, to: 3_000 }] }))[0]?.excused).toBe(
      true,
    )
    expect(overlaps(logOf(holder, taker), fatesOf({ tw1: [] }))[0]?.excused).toBe(false)
  })

  it("finds no overlap between runs one after the other", () => {
    expect(overlaps(logOf(run("tw1", 1, 1_000, 1_200), winner), fatesOf({}))).toEqual([])
  })
})
