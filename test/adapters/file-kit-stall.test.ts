// The task and state-flush file stores, like the ledger's (file-stall.test.ts): a writer stopped (SIGSTOP, a frozen
// VM) while it holds the lock is presumed dead after staleLockAfter and another process takes the lock over. When
// the stopped one resumes, its rewrite must not land: built on the file before the other's writes, it deleted the
// other's acknowledged claims, so a third worker claimed (and ran) those tasks again.
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import type { ChainSealer } from "../../src/core/receipts/chain.ts"
import { childBundles } from "../child-bundle.ts"
import { snapshot, taskRecord } from "./file-kit-stall-rows.ts"
import { stopHoldingLock } from "./stalled-writer.ts"

const WRITER = fileURLToPath(new URL("./file-kit-stall-writer.ts", import.meta.url))
const bundled = childBundles()
const root = mkdtempSync(join(tmpdir(), "mycelium-kit-stall-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(["tasks", "state"] as const)(
  "%s file store: a lock holder stopped past staleLockAfter",
  (kind) => {
    it("resumes without writing over what its successor wrote", { timeout: 60_000 }, async () => {
      const dir = mkdtempSync(join(root, `${kind}-`))
      const path = join(dir, "store.json")
      // Enough entries that each rewrite takes a while, so the writer is often stopped while holding the lock.
      const seed: Record<string, unknown> = {}
      for (let i = 0; i < 3000; i++) {
        const id = `seed-${i}`
        seed[id] =
          kind === "tasks"
            ? taskRecord(id, "seed", "x".repeat(300)).row
            : {
                run_id: id,
                status: "completed",
                state: { pad: "x".repeat(300) },
                updated_at: 1,
                reason: null,
                error: null,
              }
      }
      writeFileSync(path, JSON.stringify(seed, null, 2))
      const writer = spawn(process.execPath, [bundled(WRITER), kind, path, "A"], {
        stdio: ["ignore", "pipe", "inherit"],
      })
      let out = ""
      writer.stdout.on("data", (d) => {
        out += String(d)
      })
      const other = { staleLockAfter: 1, lockTimeout: 20, fsync: false }
      const tasks = new FileTaskStore(path, other)
      const state = new FileStateFlushStore(path, other)
      const mine = ["B-0", "B-1", "B-2", "B-3", "B-4"]
      try {
        while (!out.includes("\n")) await sleep(20)
        // Stop it while it holds the lock and has not begun a temp file.
        const stopped = await stopHoldingLock(writer, `${path}.lock.ts`, () =>
          readdirSync(dir).some((n) => n.endsWith(".tmp")),
        )
        expect(stopped).toBe(true)
        for (const id of mine) {
          if (kind === "tasks") expect(await tasks.swap(id, null, taskRecord(id, "B"))).not.toBeNull()
          else await state.save(snapshot(id))
        }
        writer.kill("SIGCONT")
        await sleep(1500)
      } finally {
        writer.kill("SIGKILL")
      }
      const has = async (id: string) =>
        kind === "tasks"
          ? (await tasks.get(id))?.lease?.owner === id.slice(0, 1)
          : (await state.load(id)) !== null
      const lost: string[] = []
      for (const id of mine) if (!(await has(id))) lost.push(id)
      expect(lost).toEqual([])
      // Every id the writer reported recorded is in the file too.
      for (const id of out.trim().split("\n").filter(Boolean)) if (!(await has(id))) lost.push(id)
      expect(lost).toEqual([])
      // A third claimant of the successor's task finds it taken.
      if (kind === "tasks") expect(await tasks.swap("B-0", null, taskRecord("B-0", "C"))).toBeNull()
    })
  },
)

describe("receipt file store: an append after its lock was taken over", () => {
  it("writes nothing: a paused writer's receipt would fork the chain its successor extended", async () => {
    const dir = mkdtempSync(join(root, "receipts-"))
    const store = new FileReceiptStore(join(dir, "receipts.jsonl"))
    const lockPath = `${store.path}.lock.ts`
    const record = (id: string) => ({
      receipt_id: id,
      agent_id: "a",
      action: "pay",
      action_kind: "tool" as const,
      request_id: `r-${id}`,
      inputs: { args: [], kwargs: {} },
      outputs: null,
      status: "completed" as const,
      timestamp: 1,
      signature: "00",
      error: null,
    })
    // The seal runs while the store holds its lock: here another process presumes it dead and takes the lock over.
    const takenOver: ChainSealer = {
      ledger: "a",
      seal: async (tail) => {
        const lock = JSON.parse(readFileSync(lockPath, "utf8")) as { token: string }
        lock.token = "successor0000000"
        writeFileSync(lockPath, JSON.stringify(lock))
        return { ledger: "a", seq: (tail?.seq ?? -1) + 1, prev: tail?.digest ?? null, digest: "d" } as never
      },
    }
    const err = await store.append(record("rc-1"), takenOver).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((err as Error).message).toContain("lost the lock")
    expect(await store.list()).toEqual([])
  })
})
