// `receipts export` of large receipts: the CLI asks for pages of 500 and refuses a page over 64 MiB, so 500 receipts
// of 150 KB (73 MiB) could never be exported until the API ended its pages at 8 MiB. Run against the app itself,
// through an in-process fetch.
import { afterEach, describe, expect, it, vi } from "vitest"
import { parseReceiptJson } from "../../src/adapter-kit.ts"
import { exportReceipts } from "../../src/cli/receipts-export.ts"
import { tokenAuth } from "../../src/cli/token-auth.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  verifyReceipts,
} from "../../src/receipts.ts"

const TOKEN = "large-export-token-0123456789"
afterEach(() => {
  vi.unstubAllGlobals()
})

/** The app answers the CLI's fetch in this process; returns the bytes of each page it answered. */
function inProcess(app: ReturnType<typeof createLedgerApp>): number[] {
  const sizes: number[] = []
  vi.stubGlobal("fetch", async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await app.fetch(new Request(input, init))
    const body = new Uint8Array(await res.arrayBuffer())
    sizes.push(body.length)
    return new Response(body, { status: res.status, headers: res.headers })
  })
  return sizes
}

describe("receipts export of large receipts", () => {
  it("500 receipts of 150 KB (73 MiB) export in pages of at most 8 MiB, and verify offline", async () => {
    const store = new MemoryReceiptStore()
    const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-a" })
    for (let i = 0; i < 500; i++)
      await emitter.emit({
        action: "export",
        actionKind: "tool",
        requestId: `r-${i}`,
        status: "completed",
        outputs: { report: `${i}`.padEnd(150_000, "x") },
      })
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: tokenAuth(TOKEN),
      receipts: () => ({ emitter, keys: { hmac: "k" } }),
    })
    const sizes = inProcess(app)
    let text = ""
    const n = await exportReceipts({
      url: "http://127.0.0.1:8787",
      token: TOKEN,
      write: (t) => {
        text += t
      },
    })
    expect(n).toBe(500)
    // 55 receipts of 150 KB fit in 8 MiB: ten pages, the last one short.
    expect(sizes).toHaveLength(10)
    for (const s of sizes) expect(s).toBeLessThanOrEqual(8 * 2 ** 20)
    const lines = text.trim().split("\n")
    expect(lines.map((l) => (parseReceiptJson(l) as Receipt).request_id)).toEqual(
      Array.from({ length: 500 }, (_, i) => `r-${i}`),
    )
    const report = await verifyReceipts(
      lines.map((l) => parseReceiptJson(l) as Receipt),
      { hmac: "k" },
      { requireChain: true },
    )
    expect(report).toMatchObject({ ok: true, valid: 500 })
  }, 120_000)

  it("one receipt over the CLI's 64 MiB cap stops the export with a message that says so", async () => {
    // A server (this API with a body limit raised past 32 MiB, or another) answering one receipt of 65 MiB.
    const huge = `{"receipt_id": "rcpt-0", "outputs": "${"x".repeat(65 * 2 ** 20)}"}\n`
    vi.stubGlobal(
      "fetch",
      async () => new Response(huge, { headers: { "content-type": "application/x-ndjson" } }),
    )
    const written: string[] = []
    await expect(
      exportReceipts({ url: "http://127.0.0.1:8787", token: TOKEN, write: (t) => written.push(t) }),
    ).rejects.toThrow(/over 67108864 bytes: .*a single receipt this large/)
    expect(written).toEqual([])
  })
})
