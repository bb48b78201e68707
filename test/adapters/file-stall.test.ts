// A writer stopped (SIGSTOP, a frozen VM) while it holds the file store's lock is presumed dead after
// staleLockAfter, and another process takes the lock over. When the stopped one resumes, its rewrite of the file
// must not land: it was built on the rows before the other's writes, and renaming it into place deleted the
// other's claims, so their tools could run again.
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { stopHoldingLock } from "./stalled-writer.ts"

const WRITER = fileURLToPath(new URL("./file-stall-writer.ts", import.meta.url))
const root = mkdtempSync(join(tmpdir(), "mycelium-stall-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("file store: a lock holder stopped past staleLockAfter", () => {
  it("resumes without writing over the rows its successor wrote", { timeout: 60_000 }, async () => {
    const path = join(root, "ledger.json")
    const seed = new FileLedgerStorage(path, { fsync: false })
    // Enough rows that each rewrite takes a while, so the writer is often stopped while holding the lock.
    await Promise.all(
      Array.from({ length: 3000 }, (_, i) =>
        seed.set(newEntry({ requestId: `seed-${i}`, tool: "t", kwargs: { pad: "x".repeat(300) } }, 1)),
      ),
    )
    const writer = spawn(process.execPath, ["--import", "tsx", WRITER, path, "A"], {
      stdio: ["ignore", "pipe", "inherit"],
    })
    let out = ""
    writer.stdout.on("data", (d) => {
      out += String(d)
    })
    try {
      while (!out.includes("\n")) await sleep(20)
      // Stop it while it holds the lock and has not begun its temp file.
      const stopped = await stopHoldingLock(writer, `${path}.lock.ts`, () =>
        readdirSync(root).some((n) => n.startsWith("ledger.json.tmp-")),
      )
      expect(stopped).toBe(true)
      const other = new FileLedgerStorage(path, { staleLockAfter: 1, lockTimeout: 20, fsync: false })
      const mine: string[] = []
      for (let i = 0; i < 5; i++) {
        const now = Date.now() / 1000
        const r = await other.tryClaimInflight(newEntry({ requestId: `B-${i}`, tool: "t" }, now), 60, now)
        if (r.outcome === "claimed") mine.push(`B-${i}`)
      }
      expect(mine).toHaveLength(5)
      writer.kill("SIGCONT")
      await sleep(1500)
    } finally {
      writer.kill("SIGKILL")
    }
    const rows = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>
    expect(["B-0", "B-1", "B-2", "B-3", "B-4"].filter((id) => !(id in rows))).toEqual([])
    // Every id the writer reported claimed is in the file too.
    const claimed = out.trim().split("\n").filter(Boolean)
    expect(claimed.filter((id) => !(id in rows))).toEqual([])
  })
})
