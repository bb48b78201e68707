// The file stores' lock options are checked when the store is built. A NaN or "x" lockTimeout waited on a held lock
// forever, and a staleLockAfter of -1 took over a live writer's lock at once (two writers on one file).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { InvalidOptionError } from "../../src/core/index.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-lock-options-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const stores = {
  ledger: (o: object) => new FileLedgerStorage(join(dir, "ledger.json"), o),
  tasks: (o: object) => new FileTaskStore(join(dir, "tasks.json"), o),
  state: (o: object) => new FileStateFlushStore(join(dir, "state.json"), o),
  receipts: (o: object) => new FileReceiptStore(join(dir, "receipts.jsonl"), o),
}

describe("file stores: lock options", () => {
  it.each(Object.entries(stores))(
    "%s store refuses a lock option that is not a usable number of seconds",
    (_, make) => {
      for (const o of [
        { lockTimeout: Number.NaN },
        { lockTimeout: "x" },
        { lockTimeout: -1 },
        { lockTimeout: Number.POSITIVE_INFINITY },
        { staleLockAfter: -1 },
        { staleLockAfter: 0 },
        { staleLockAfter: Number.NaN },
      ]) {
        const name = Object.keys(o)[0] as string
        expect(() => make(o), `${name}: ${String(Object.values(o)[0])}`).toThrow(InvalidOptionError)
        expect(() => make(o), name).toThrow(name)
      }
    },
  )

  it.each(Object.entries(stores))("%s store takes sane ones", (_, make) => {
    expect(() => make({})).not.toThrow()
    expect(() => make({ lockTimeout: 0, staleLockAfter: 1 })).not.toThrow()
    expect(() => make({ lockTimeout: 0.3, staleLockAfter: 30 })).not.toThrow()
  })
})
