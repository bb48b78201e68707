// A lock holder paused past staleLockAfter (SIGSTOP, a frozen VM) is presumed dead and its lock taken over. When it
// resumes it must neither rename its rewrite into place (built on the rows before its successor's, it erased the
// successor's claim: that tool ran twice) nor delete its successor's lock on release (a third writer then ran
// beside the successor). And a fresh lock of another host is waited for, whatever its pid means here.
import { spawnSync } from "node:child_process"
import type * as fs from "node:fs"
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it, vi } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileLock } from "../../src/adapters/file-kit.ts"

/** Runs just before the store opens a file: where a test pauses the writer holding the lock. */
const hook = vi.hoisted(() => ({ beforeOpen: null as ((path: string) => void) | null }))
vi.mock("node:fs", async (original) => {
  const real = await original<typeof import("node:fs")>()
  return {
    ...real,
    openSync: (...args: Parameters<typeof fs.openSync>) => {
      hook.beforeOpen?.(String(args[0]))
      return real.openSync(...args)
    },
  }
})

const SUCCESSOR = fileURLToPath(new URL("./file-lock-successor.ts", import.meta.url))
const root = mkdtempSync(join(tmpdir(), "mycelium-handover-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const freshPath = () => join(mkdtempSync(join(root, "l-")), "ledger.json")

/** What a pause past staleLockAfter does to the holder's lock, without the wait: its record is a minute old. */
function ageLock(path: string): void {
  const lock = `${path}.lock.ts`
  const record = JSON.parse(readFileSync(lock, "utf8")) as { at: number }
  writeFileSync(lock, JSON.stringify({ ...record, at: Date.now() - 60_000 }))
}

describe("file lock: a holder presumed dead and replaced, resuming", () => {
  it("has its rewrite refused: the successor's claim stays in the file", async () => {
    const path = freshPath()
    const a = new FileLedgerStorage(path, { fsync: false })
    await a.set(newEntry({ requestId: "seed", tool: "t" }, 1))
    let successor = ""
    hook.beforeOpen = (file) => {
      if (!file.startsWith(`${path}.tmp-`)) return
      hook.beforeOpen = null
      // Paused holding the lock, its rows applied, before its temp file: another process takes over meanwhile.
      ageLock(path)
      successor = spawnSync(process.execPath, ["--import", "tsx", SUCCESSOR, path, "B-pay"], {
        encoding: "utf8",
      }).stdout
    }
    try {
      await expect(a.set(newEntry({ requestId: "A-pay", tool: "t" }, 1))).rejects.toThrow(/lost .*retry/)
    } finally {
      hook.beforeOpen = null
    }
    expect(successor).toBe("claimed")
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toEqual(["seed", "B-pay"])
    const again = await new FileLedgerStorage(path).tryClaimInflight(
      newEntry({ requestId: "B-pay", tool: "t" }, 2),
      60,
      2,
    )
    expect(again.outcome).not.toBe("claimed")
  })

  it("leaves its successor's lock in place on release: a third writer still waits", async () => {
    const path = freshPath()
    const a = new FileLock(path, { lockTimeout: 0 })
    await a.acquire()
    ageLock(path)
    const b = new FileLock(path, { lockTimeout: 1 })
    await b.acquire()
    expect([a.held(), b.held()]).toEqual([false, true])
    a.release()
    expect(b.held()).toBe(true)
    await expect(new FileLock(path, { lockTimeout: 0.1 }).acquire()).rejects.toMatchObject({
      code: "ledger_file_lock_timeout",
    })
    b.release()
    expect(existsSync(`${path}.lock.ts`)).toBe(false)
  })
})

describe("file lock: a fresh lock of another host", () => {
  it.skipIf(process.platform !== "linux")(
    "is waited for, not taken over, though its pid is not alive on this host",
    async () => {
      const path = freshPath()
      // Same PID namespace name (every host's initial one reads alike): only the hostname tells it is not ours.
      const dead = spawnSync(process.execPath, ["-e", "process.exit(0)"]).pid as number
      const record = JSON.stringify({
        pid: dead,
        host: "other-host",
        pidns: readlinkSync("/proc/self/ns/pid"),
        token: "t",
        at: Date.now(),
      })
      writeFileSync(`${path}.lock.ts`, record)
      const s = new FileLedgerStorage(path, { lockTimeout: 0.2, staleLockAfter: 30 })
      await expect(s.set(newEntry({ requestId: "x", tool: "t" }, 1))).rejects.toMatchObject({
        code: "ledger_file_lock_timeout",
      })
      expect(readFileSync(`${path}.lock.ts`, "utf8")).toBe(record)
      expect(existsSync(path)).toBe(false)
    },
  )
})
