// Ids a caller controls become keys of the file stores' JSON objects. `task_id` is taken verbatim from a task's
// arguments, so "__proto__" must be stored like any other id: assigning it set the object's prototype instead, the
// write "succeeded" with nothing stored, and every call ran the body again.
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { StateFlush } from "../../src/state.ts"
import { TaskLedger, TaskLedgerPendingError } from "../../src/tasks.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-file-keys-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const file = () => join(dir, `f${n++}.json`)

describe("prototype-named ids in the file stores", () => {
  for (const id of ["__proto__", "constructor", "hasOwnProperty"]) {
    it(`task_id ${id}: the body runs once, concurrent callers are refused, and the row is in the file`, async () => {
      const path = file()
      const ledger = new TaskLedger({
        storage: new FileTaskStore(path, { fsync: false }),
        leaseRenewInterval: 0,
      })
      let runs = 0
      let release!: () => void
      const gate = new Promise<void>((r) => {
        release = r
      })
      const t = ledger.task("charge", async () => {
        runs++
        await gate
        return "charged"
      })
      const first = t({ task_id: id })
      await new Promise((r) => setTimeout(r, 20))
      const second = t({ task_id: id }).catch((e: unknown) => e)
      const early = await Promise.race([
        second,
        new Promise((r) => setTimeout(() => r("still running"), 500)),
      ])
      release()
      expect(early).toBeInstanceOf(TaskLedgerPendingError)
      expect(await first).toBe("charged")
      expect(await t({ task_id: id })).toBe("charged")
      expect(runs).toBe(1)
      expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toEqual([id])
    })

    it(`run id ${id}: the state snapshot is stored and loads back`, async () => {
      const path = file()
      const flush = new StateFlush({ storage: new FileStateFlushStore(path, { fsync: false }) })
      await flush.run(id, (run) => run.record({ page: 3 }))
      expect(await flush.load(id)).toMatchObject({ run_id: id, status: "completed", state: { page: 3 } })
      expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toEqual([id])
    })
  }
})
