// A rewrite goes to the kernel as writev batches of at most IOV_MAX chunks (two per row), and writev may write less
// than it was given (a signal, a full pipe, another runtime's fs layer). The file must come out byte for byte as a
// whole write makes it: a dropped or repeated byte is a corrupt ledger, or a row's text changed under the original.
import type * as fs from "node:fs"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

/** When set, the n-th writev writes at most caps[n % caps.length] bytes: the given buffers' front, cut anywhere. */
const hook = vi.hoisted(() => ({ caps: null as number[] | null, calls: 0, short: 0 }))
vi.mock("node:fs", async (original) => {
  const real = await original<typeof import("node:fs")>()
  return {
    ...real,
    writevSync: (fd: number, buffers: readonly NodeJS.ArrayBufferView[], position?: number) => {
      const caps = hook.caps
      if (caps === null) return real.writevSync(fd, buffers, position)
      let room = caps[hook.calls++ % caps.length] as number
      let done = 0
      for (const b of buffers) {
        const n = Math.min(b.byteLength, room)
        done += real.writeSync(fd, new Uint8Array(b.buffer, b.byteOffset, n))
        room -= n
        if (n < b.byteLength) {
          hook.short++
          break
        }
      }
      return done
    },
  } satisfies Partial<typeof fs>
})

const root = mkdtempSync(join(tmpdir(), "mycelium-short-write-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Three rows set one by one, then 700 in one batch: its rewrite is 1,407 chunks, two writev batches. */
async function fill(path: string): Promise<string> {
  const s = new FileLedgerStorage(path, { fsync: false })
  for (let i = 0; i < 3; i++) await s.set(newEntry({ requestId: `r${i}`, tool: "t", kwargs: { n: i } }, 1))
  await Promise.all(
    Array.from({ length: 700 }, (_, i) =>
      s.set(newEntry({ requestId: `b${i}`, tool: "t", kwargs: { note: "é".repeat(i % 7), i } }, 1)),
    ),
  )
  await s.close()
  return readFileSync(path, "utf8")
}

describe("file store: writev that writes less than it was given", () => {
  it("the file is byte for byte what whole writes make, for cuts inside a chunk and between chunks", async () => {
    const whole = await fill(join(mkdtempSync(join(root, "whole-")), "ledger.json"))
    // A byte; inside a row; across rows; most of a batch.
    hook.caps = [1, 13, 500, 4099, 150_000]
    hook.calls = 0
    hook.short = 0
    let cut: string
    try {
      cut = await fill(join(mkdtempSync(join(root, "cut-")), "ledger.json"))
    } finally {
      hook.caps = null
    }
    expect(hook.short).toBeGreaterThan(0)
    expect(cut).toBe(whole)
    expect(Object.keys(JSON.parse(cut) as object)).toHaveLength(703)
  })
})
