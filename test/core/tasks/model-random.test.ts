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
import { type FakeTimers, type TaskModelStats, TaskModelWorld } from "./model-world.ts"

const env = (name: string, fallback: number): number => {
  const v = process.env[name]
  if (v === undefined || v === "") return fallback
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number >= 0, got '${v}'`)
  return n
}

const RUNS = env("MYCELIUM_MODEL_RUNS", 200)
const FILE_RUNS = env("MYCELIUM_MODEL_FILE_RUNS", 20)
const STEPS = env("MYCELIUM_MODEL_STEPS", 60)
// A fixed base seed: every run of the suite repeats the same interleavings; a soak picks its own.
const BASE = env("MYCELIUM_MODEL_SEED", 45_100)

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

async function runAll(runs: number, store: (i: number) => TaskStore, label: string) {
  const totals: Omit<TaskModelStats, "errors" | "maxPending"> = {
    steps: 0,
    calls: 0,
    runs: 0,
    replays: 0,
    claims: 0,
    takeovers: 0,
    renewals: 0,
    crashes: 0,
    releases: 0,
    releaseRefusals: 0,
    linkFailures: 0,
    aborts: 0,
    forged: 0,
  }
  const errors: Record<string, number> = {}
  let maxPending = 0
  const started = performance.now()
  for (let i = 0; i < runs; i++) {
    const world = new TaskModelWorld((BASE + i) >>> 0, store(i), timers)
    await world.run(STEPS)
    for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += world.stats[k]
    for (const [name, n] of Object.entries(world.stats.errors)) errors[name] = (errors[name] ?? 0) + n
    maxPending = Math.max(maxPending, world.stats.maxPending)
  }
  const seconds = (performance.now() - started) / 1000
  if (process.env.MYCELIUM_MODEL_REPORT)
    console.log(
      `task model (${label}): ${runs} runs in ${seconds.toFixed(2)} s (${(runs / seconds).toFixed(0)} runs/s); ` +
        `max ${maxPending} calls in flight\n${JSON.stringify(totals)}\n${JSON.stringify(errors)}`,
    )
  return { totals, errors, maxPending }
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
