// Ids a caller controls become keys of the file stores' JSON objects. `task_id` is taken verbatim from a task's
// arguments, so "__proto__" must be stored like any other id: assigning it set the object's prototype instead, the
// write "succeeded" with nothing stored, and every call ran the body again.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
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

// The Python original's task file has no leases sidecar: read as missing, the leases were `{}`, and `leases[id]` of a
// task id "constructor" found Object.prototype's member, a "lease" that is not one. get(), list() and a release of
// that task (`mycelium tasks list` / `release` too) called the whole store corrupt, naming a file that does not exist.
describe("a Python task file (no leases sidecar) holding a prototype-named task id", () => {
  const row = (id: string, status: string) => ({
    request_id: id,
    task: "pay",
    args: [],
    kwargs: {},
    status,
    result: status === "completed" ? "paid" : null,
    error: status === "failed" ? "boom" : null,
    started_at: 1700000000.5,
    finished_at: status === "in-flight" ? null : 1700000001.5,
  })

  it("get, list and release read and settle it", async () => {
    const path = file()
    const ids = ["constructor", "toString", "hasOwnProperty", "job-2"]
    writeFileSync(
      path,
      JSON.stringify(
        Object.fromEntries(ids.map((id, i) => [id, row(id, i % 2 ? "completed" : "failed")])),
        null,
        2,
      ),
    )
    const storage = new FileTaskStore(path, { fsync: false })
    expect(existsSync(`${path}.leases.json`)).toBe(false)
    expect(await storage.get("constructor")).toMatchObject({ row: { status: "failed" }, lease: null })
    expect(await storage.get("valueOf")).toBeNull()
    const ledger = new TaskLedger({ storage, leaseRenewInterval: 0 })
    expect((await ledger.list()).map((t) => [t.row.request_id, t.lease])).toEqual(ids.map((id) => [id, null]))
    await ledger.release("constructor", { verified: "not_executed", by: "ops", reason: "r" })
    expect(await storage.get("constructor")).toMatchObject({ row: { request_id: "constructor" } })
    expect(await storage.get("toString")).toMatchObject({
      row: { status: "completed", result: "paid" },
      lease: null,
    })
  })
})
