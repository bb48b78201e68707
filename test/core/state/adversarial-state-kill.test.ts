// StateFlush's file store under SIGKILL: a writer killed at a random point of a large write (or parked holding the
// lock) leaves a file that still parses, holds a whole snapshot no newer than the last one reported, and does not
// block the next writer.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { FileStateFlushStore } from "../../../src/adapters/file-state.ts"
import { StateFlush } from "../../../src/state.ts"
import { childBundles } from "../../child-bundle.ts"

const CHILD = fileURLToPath(new URL("./state-writer-child.ts", import.meta.url))
const bundled = childBundles()
const root = mkdtempSync(join(tmpdir(), "mycelium-state-kill-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Starts a writer; resolves once it reported `minWrites` checkpoints, then kills it after `killAfterMs`. */
async function killWriter(
  path: string,
  runId: string,
  minWrites: number,
  killAfterMs: number,
  park?: string,
) {
  const child = spawn(process.execPath, [bundled(CHILD), path, runId], {
    env: { ...process.env, ...(park ? { MYCELIUM_TEST_LOCK_PARK: park } : {}) },
    stdio: ["ignore", "ignore", "pipe"],
  })
  let err = ""
  let last = 0
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`writer stalled: ${err.slice(-500)}`)), 30_000)
    child.stderr.on("data", (d) => {
      err += String(d)
      for (const m of err.matchAll(/WROTE (\d+)/g)) last = Math.max(last, Number(m[1]))
      if (park ? err.includes(`PARKED ${park}`) : last >= minWrites) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once("exit", (code) => reject(new Error(`writer exited ${code}: ${err.slice(-500)}`)))
  })
  await new Promise((r) => setTimeout(r, killAfterMs))
  const exited = new Promise((r) => child.once("exit", r))
  child.kill("SIGKILL")
  await exited
  for (const m of err.matchAll(/WROTE (\d+)/g)) last = Math.max(last, Number(m[1]))
  return last
}

describe("FileStateFlushStore: a writer SIGKILLed mid-write", () => {
  it("5 kills at random points of 500 KB writes: the file always parses to one whole snapshot, and a new run writes at once", async () => {
    const path = join(root, "random.json")
    for (let round = 0; round < 5; round++) {
      const reported = await killWriter(path, "run-1", 2, Math.floor(Math.random() * 40))
      const s = await new FileStateFlushStore(path).load("run-1")
      const n = s?.state.n as number
      expect(n).toBeGreaterThanOrEqual(reported) // every reported checkpoint is durable
      expect(n).toBeLessThanOrEqual(reported + 1) // at most the one in flight when killed
      expect(s?.state.tail).toBe(n)
      expect(s?.state.blob).toHaveLength(500_000 + n)
      // The dead writer's lock (if it held one) must not stall the next writer.
      const t0 = Date.now()
      await new StateFlush({ storage: new FileStateFlushStore(path, { lockTimeout: 20 }) }).run(
        `after-${round}`,
        (run) => run.record({ round }),
      )
      expect(Date.now() - t0).toBeLessThan(10_000)
    }
  })

  it("killed while holding the lock: the snapshot before it is intact and the next writer proceeds", async () => {
    const path = join(root, "held.json")
    await new StateFlush({ storage: new FileStateFlushStore(path) }).run("run-h", (run) =>
      run.record({ n: 0 }),
    )
    await killWriter(path, "run-h", 0, 0, "lock-held")
    expect(await new FileStateFlushStore(path).load("run-h")).toMatchObject({
      status: "completed",
      state: { n: 0 },
    })
    const t0 = Date.now()
    await new StateFlush({ storage: new FileStateFlushStore(path, { lockTimeout: 20 }) }).run("next", (run) =>
      run.record({ ok: true }),
    )
    expect(Date.now() - t0).toBeLessThan(10_000)
    expect((await new FileStateFlushStore(path).load("next"))?.state).toEqual({ ok: true })
  })
})
