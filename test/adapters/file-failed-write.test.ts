// A ledger write that fails (EIO, ENOSPC: here the temp file cannot be opened) must leave the store as if the
// mutation never happened. Answering "claimed" before the rewrite failed, or keeping the failed row in the cache,
// told a caller its tool may run when no claim was stored; a later, unrelated write then put that row in the file.
import type * as fs from "node:fs"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

/** Runs just before the store opens a file: where a test makes the open fail. */
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

const root = mkdtempSync(join(tmpdir(), "mycelium-failed-write-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("file store: a rewrite that fails", () => {
  it("rejects the claim and leaves no row behind, in the cache or the file", async () => {
    const path = join(mkdtempSync(join(root, "l-")), "ledger.json")
    const s = new FileLedgerStorage(path, { fsync: false })
    await s.set(newEntry({ requestId: "seed", tool: "t" }, 1))
    hook.beforeOpen = (file) => {
      if (!file.startsWith(`${path}.tmp-`)) return
      hook.beforeOpen = null
      throw Object.assign(new Error(`EIO: i/o error, open '${file}'`), { code: "EIO" })
    }
    try {
      await expect(
        s.tryClaimInflight(newEntry({ requestId: "pay", tool: "t" }, 1), 60, 1),
      ).rejects.toMatchObject({
        code: "EIO",
      })
    } finally {
      hook.beforeOpen = null
    }
    expect(await s.get("pay")).toBeNull()
    await s.set(newEntry({ requestId: "other", tool: "t" }, 1))
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toEqual(["seed", "other"])
    expect(readdirSync(dirname(path)).filter((n) => n.includes(".tmp-"))).toEqual([])
    const again = await new FileLedgerStorage(path).tryClaimInflight(
      newEntry({ requestId: "pay", tool: "t" }, 2),
      60,
      2,
    )
    expect(again.outcome).toBe("claimed")
  })
})
