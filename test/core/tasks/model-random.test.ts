// A model-based, seeded random test of the task ledger's promise (docs/tasks.md): a task id's body runs once across
// workers, crashes, restarts, partitions and operator releases (again only after a failure, a lapsed lease or a
// release), a completed task replays its one stored result, and no row stays held once every worker ended. Random
// interleavings are checked against a reference model after every step (model-world.ts). A failure prints its seed:
//   MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 npx vitest run --project node test/core/tasks/model-random.test.ts
// MYCELIUM_MODEL_RUNS=20000 soaks; MYCELIUM_MODEL_STEPS sets the steps per run; MYCELIUM_MODEL_FILE_RUNS the file
// store's runs.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { FileTaskStore } from "../../../src/adapters/file-tasks.ts"
import { MemoryTaskStore, type TaskStore } from "../../../src/tasks.ts"
import { ModelTally, modelKnobs, runSeeds } from "../model-kit.ts"
import { type FakeTimers, type TaskModelStats, TaskModelWorld } from "./model-world.ts"

// A fixed base seed: every run of the suite repeats the same interleavings; a soak picks its own.
const knobs = modelKnobs(process.env, 45_100)
const RUNS = knobs.runs ?? 200
const FILE_RUNS = knobs.whole("FILE_RUNS", 20)
const { steps: STEPS, base: BASE } = knobs

// Timed renewals and the lease watch are timers: faked, they move only with the model's clock (the world advances
// both), so a run repeats from its seed and a crashed worker's timers fire only when the model says.
const fake = () =>
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] })
// Cleared between worlds: a crashed worker's renewal timer is the last world's.
const timers: FakeTimers = { advance: (ms) => vi.advanceTimersByTime(ms), clear: () => vi.clearAllTimers() }
beforeAll(fake)
afterAll(() => {
  vi.useRealTimers()
})

/** Task counts a report adds up, in TaskModelStats's order. */
const COUNTS = [
  "steps",
  "calls",
  "runs",
  "replays",
  "claims",
  "takeovers",
  "renewals",
  "crashes",
  "releases",
  "releaseRefusals",
  "linkFailures",
  "aborts",
  "forged",
] as const satisfies ReadonlyArray<Exclude<keyof TaskModelStats, "errors" | "maxPending">>

async function runAll(runs: number, store: (i: number) => TaskStore, label: string) {
  const tally = new ModelTally(COUNTS)
  const { seconds } = await runSeeds({ runs, seconds: 0, base: BASE }, async (seed, i) => {
    const world = new TaskModelWorld(seed, store(i), timers)
    await world.run(STEPS)
    tally.add(world.stats)
  })
  if (knobs.report)
    console.log(
      `task model (${label}): ${runs} runs in ${seconds.toFixed(2)} s (${(runs / seconds).toFixed(0)} runs/s); ` +
        `max ${tally.maxPending} calls in flight\n${tally.json}`,
    )
  return tally
}

describe("task ledger against a reference model (seeded random interleavings)", () => {
  it(
    `${RUNS} runs of ${STEPS} steps on the memory store from seed ${BASE}: once per id, one result, no held row`,
    async () => {
      const { totals, errors, maxPending } = await runAll(RUNS, () => new MemoryTaskStore(), "memory")
      // The runs explored what they are for: replays, take-overs after lapsed leases, crashes, releases, refusals.
      if (RUNS >= 100) {
        expect(totals.runs).toBeGreaterThan(RUNS)
        expect(totals.replays).toBeGreaterThan(RUNS / 2)
        expect(totals.takeovers).toBeGreaterThan(RUNS / 10)
        expect(totals.crashes).toBeGreaterThan(RUNS / 2)
        expect(totals.releases).toBeGreaterThan(0)
        expect(totals.releaseRefusals).toBeGreaterThan(0)
        expect(totals.forged).toBeGreaterThan(0)
        expect(errors.TaskLedgerPendingError).toBeGreaterThan(0)
        expect(errors.TaskStoreUnavailableError).toBeGreaterThan(0)
        expect(errors.TaskResultUnstorableError).toBeGreaterThan(0)
        expect(errors.TaskLeaseLostError).toBeGreaterThan(0)
        expect(maxPending).toBeGreaterThan(3)
      }
    },
    60_000 + RUNS * 50,
  )

  describe("on the file store", () => {
    let dir = ""
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "task-model-"))
    })
    afterAll(() => rmSync(dir, { recursive: true, force: true }))
    it(
      `${FILE_RUNS} runs of ${STEPS} steps on the file store`,
      async () => {
        const { totals } = await runAll(
          FILE_RUNS,
          (i) => new FileTaskStore(join(dir, `tasks-${i}.json`)),
          "file",
        )
        if (FILE_RUNS >= 10) expect(totals.replays).toBeGreaterThan(0)
      },
      60_000 + FILE_RUNS * 500,
    )
  })

  it("a seed repeats its run step for step", async () => {
    const seed = (BASE + 7919) >>> 0
    const traces = []
    for (let i = 0; i < 2; i++) {
      const world = new TaskModelWorld(seed, new MemoryTaskStore(), timers)
      await world.run(STEPS)
      traces.push(world.trace)
    }
    expect(traces[1]).toEqual(traces[0])
  })
})
