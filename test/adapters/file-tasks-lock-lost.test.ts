// The task file store writes two files, the rows and the leases sidecar, under one lock. A writer paused past
// staleLockAfter loses that lock to a successor; if it lost it between the two renames, the old store wrote one file
// and then told the caller "nothing was written: retry": a finished task stored completed reported as failed, a
// reclaimed task's lease stored while its claim was reported refused (the retry then pending for a whole lease).
import type * as fs from "node:fs"
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import type { TaskRecord } from "../../src/core/tasks/record.ts"
import { recordVersion } from "../../src/core/tasks/store.ts"
import { taskRecord } from "./file-kit-stall-rows.ts"

/** Where a test takes the lock over: after a rename, or before a temp file is opened. */
const hook = vi.hoisted(() => ({
  afterRename: null as (() => void) | null,
  beforeOpen: null as ((path: string) => void) | null,
}))
vi.mock("node:fs", async (original) => {
  const real = await original<typeof import("node:fs")>()
  return {
    ...real,
    renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      real.renameSync(from, to)
      hook.afterRename?.()
    },
    openSync: (...args: Parameters<typeof fs.openSync>) => {
      hook.beforeOpen?.(String(args[0]))
      return real.openSync(...args)
    },
  }
})

const root = mkdtempSync(join(tmpdir(), "mycelium-tasks-lost-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** What a stale takeover does to the lock file: another holder's record and token replace this one's. */
const takeOver = (path: string) =>
  writeFileSync(
    `${path}.lock.ts`,
    JSON.stringify({ pid: 1, host: "other-host", token: "successor", at: Date.now() }),
  )

describe("task file store: the lock lost between its two renames", () => {
  const finished = (r: TaskRecord): TaskRecord => ({
    row: { ...r.row, status: "completed", result: { paid: 100 }, finished_at: r.row.started_at + 1 },
    lease: null,
  })
  it.each([
    ["a claim (leases first)", false],
    ["a completion (rows first)", true],
  ])("%s lands whole and the swap says so", async (_, finish) => {
    const path = join(mkdtempSync(join(root, "t-")), "tasks.json")
    const store = new FileTaskStore(path, { fsync: false })
    const claim = taskRecord("T-1", "me")
    let expected: string | null = null
    if (finish) expected = await store.swap("T-1", null, claim)
    const next = finish ? finished(claim) : claim
    let renames = 0
    hook.afterRename = () => {
      if (++renames === 1) takeOver(path)
    }
    try {
      const got = await store.swap("T-1", expected, next).catch((e: unknown) => e)
      expect(got).toBe(recordVersion(next))
    } finally {
      hook.afterRename = null
      rmSync(`${path}.lock.ts`, { force: true })
    }
    expect(renames).toBe(2)
    expect(await store.get("T-1")).toMatchObject({ row: next.row, lease: next.lease })
  })

  it("lost before the first rename: neither file is written and no temp file stays", async () => {
    const dir = mkdtempSync(join(root, "t-"))
    const path = join(dir, "tasks.json")
    const store = new FileTaskStore(path, { fsync: false })
    const claim = taskRecord("T-1", "me")
    const v = await store.swap("T-1", null, claim)
    let opens = 0
    hook.beforeOpen = (file) => {
      // Before the second temp file: the first one is staged already, and must not be left behind.
      if (file.endsWith(".tmp") && ++opens === 2) takeOver(path)
    }
    try {
      await expect(store.swap("T-1", v, finished(claim))).rejects.toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
    } finally {
      hook.beforeOpen = null
      rmSync(`${path}.lock.ts`, { force: true })
    }
    expect(await store.get("T-1")).toMatchObject({ row: claim.row, lease: claim.lease })
    expect(readdirSync(dir).sort()).toEqual(["tasks.json", "tasks.json.leases.json"])
  })
})
