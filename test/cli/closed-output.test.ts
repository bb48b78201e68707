// Standard output the CLI cannot write to. A reader that stops early (`| head`) dropped the exit code with the rest
// of the output: `receipts verify forged.jsonl | head` exited 0, so a CI step under `set -o pipefail` passed on a
// forged audit trail. A full disk under `--json > rows.json` printed Node's stack trace.
import { spawn, spawnSync } from "node:child_process"
import { once } from "node:events"
import { closeSync, existsSync, openSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { receiptExportLine } from "../../src/core/receipts/record.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../src/receipts.ts"
import { tempDirs } from "../temp-dirs.ts"
import { cliCommand } from "./cli-bin.ts"

const cwd = tempDirs("mycelium-closed-output-")()
const receipts = join(cwd, "receipts.jsonl")
let LINE = ""

beforeAll(async () => {
  // Signed with another key than the one verify is given: every receipt fails, two lines each, about 200 KB of
  // output, past what a pipe holds, so the CLI is still writing when the reader goes.
  const store = new MemoryReceiptStore()
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("the-real-key"), store, agentId: "a" })
  for (let i = 0; i < 1000; i++)
    await emitter.emit({ action: "pay", actionKind: "tool", requestId: `r-${i}`, status: "completed" })
  writeFileSync(receipts, (await store.list()).map((r) => `${JSON.stringify(r)}\n`).join(""))
  LINE = receiptExportLine((await store.list())[0] as Parameters<typeof receiptExportLine>[0])
})

/** Runs the CLI with its stdout on a pipe this side closes after the first chunk, as `| head -1` does. */
async function headOne(args: string[], env: Record<string, string>) {
  const [cmd, pre] = cliCommand()
  const child = spawn(cmd, [...pre, ...args], { cwd, env: { ...process.env, NO_COLOR: "1", ...env } })
  let err = ""
  child.stderr.on("data", (d) => {
    err += String(d)
  })
  let first = ""
  child.stdout.once("data", (d) => {
    first = String(d)
    child.stdout.destroy()
  })
  const [code] = (await once(child, "close")) as [number | null]
  return { code, first, err }
}

describe("a reader that closes the pipe early", () => {
  it("keeps the exit code: receipts verify of a forged file still exits 1", async () => {
    const full = spawnSync(cliCommand()[0], [...cliCommand()[1], "receipts", "verify", receipts], {
      cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", MYCELIUM_SIGNING_KEY: "not-the-key" },
      maxBuffer: 2 ** 26,
    })
    expect(full.status).toBe(1)
    expect(full.stdout.length).toBeGreaterThan(2 ** 17)
    const r = await headOne(["receipts", "verify", receipts], { MYCELIUM_SIGNING_KEY: "not-the-key" })
    expect(r.first).toMatch(/^FAIL {2}#0 /)
    expect(r.code, r.err).toBe(1)
    // The reader's choice, not an error: nothing on stderr.
    expect(r.err).toBe("")
  })
})

// Found by a review: `receipts export` without -o kept fetching every page (up to --max-receipts, a million receipts)
// after the reader had gone, dropping each, then said "N receipts exported" and exited 0. It stops at the closed
// pipe: the export did not reach its reader, so it failed (exit 1).
describe("receipts export to standard output, its reader gone", () => {
  it("stops fetching pages and exits 1, not 'exported'", async () => {
    const PAGES = 40
    let closed = () => {}
    const gone = new Promise<void>((r) => {
      closed = r
    })
    const seen: string[] = []
    const api = createServer((req, res) => {
      seen.push(req.url ?? "")
      const n = Number(new URL(req.url ?? "/", "http://x").searchParams.get("cursor") ?? "0")
      const answer = () => {
        res.writeHead(200, {
          "content-type": "application/x-ndjson",
          ...(n + 1 < PAGES ? { link: `<?format=jsonl&limit=500&cursor=${n + 1}>; rel="next"` } : {}),
        })
        res.end(`${Array(20).fill(LINE).join("\n")}\n`)
      }
      // The first page at once; the others once the reader has closed the pipe.
      if (n === 0) answer()
      else void gone.then(() => setTimeout(answer, 100))
    })
    await new Promise<void>((r) => api.listen(0, "127.0.0.1", r))
    try {
      const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}`
      const [cmd, pre] = cliCommand()
      const child = spawn(cmd, [...pre, "receipts", "export", "--url", url], {
        cwd,
        env: { ...process.env, NO_COLOR: "1", MYCELIUM_TOKEN: "" },
      })
      let err = ""
      child.stderr.on("data", (d) => {
        err += String(d)
      })
      child.stdout.once("data", () => {
        child.stdout.destroy()
        closed()
      })
      const [code] = (await once(child, "close")) as [number | null]
      expect(seen.length, err).toBeLessThanOrEqual(3)
      expect(code, err).toBe(1)
      expect(err).not.toContain("receipts exported")
      expect(err).toContain("standard output was closed")
    } finally {
      api.closeAllConnections()
      api.close()
    }
  }, 30_000)
})

describe.runIf(existsSync("/dev/full"))("standard output on a full disk", () => {
  it("is one line naming it and exit 1, never a stack trace", () => {
    const full = openSync("/dev/full", "w")
    try {
      for (const args of [["--help"], ["receipts", "verify", receipts, "--json"]]) {
        const r = spawnSync(cliCommand()[0], [...cliCommand()[1], ...args], {
          cwd,
          encoding: "utf8",
          env: { ...process.env, NO_COLOR: "1", MYCELIUM_SIGNING_KEY: "the-real-key" },
          stdio: ["ignore", full, "pipe"],
        })
        expect(r.status, r.stderr).toBe(1)
        expect(r.stderr).toBe(
          "mycelium: cannot write to standard output (ENOSPC: no space left on device): nothing more is printed\n",
        )
      }
    } finally {
      closeSync(full)
    }
  })
})
