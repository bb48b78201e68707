// Adversarial review of the receipts export: every receipt shape a store can hold survives the round trip
// store -> GET /v1/receipts?format=jsonl -> `receipts export` -> `receipts verify`'s reader, exactly. The Python lines
// below were written and HMAC-signed by CPython 3's json.dumps (the original's writer) with the key PY_KEY: 100.0,
// -0.0, 1e+16, integers beyond 2^64, non-ASCII, lone surrogates, U+2028, a text holding a newline and a whole
// receipt line, a '__proto__' key, and a 'chain' member inside outputs.
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { exportJWK, generateKeyPair } from "jose"
import { afterAll, describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { run as receiptsCommand } from "../../src/cli/commands/receipts.ts"
import { serve } from "../../src/cli/http-bridge.ts"
import { exportReceipts } from "../../src/cli/receipts-export.ts"
import { tokenAuth } from "../../src/cli/token-auth.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { jwksVerifier, jwsReceiptSigner } from "../../src/core/receipts/jws.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { hmacReceiptSigner, type Receipt, ReceiptEmitter, verifyReceipts } from "../../src/receipts.ts"

const PY_KEY = "py-key-é"
const TOKEN = "adversarial-export-token-0123"
const PYTHON_LINES = [
  `{"receipt_id": "rcpt-0000000000000001", "agent_id": "agent-a", "action": "pay", "action_kind": "tool", "request_id": "r-py-1", "inputs": {"args": [], "kwargs": {"amount": 100.0, "wei": 1180591620717411303424, "neg": -18446744073709551616}}, "outputs": {"paid": 100.0, "refund": -0.0, "big": 1e+16, "tiny": 1.5e-07}, "status": "completed", "timestamp": 1767225600.0, "signature": "66256d98efb06f69f2b845b9616f6d15233abf4413dcd43e1aaec4461ee27b6d", "error": null}`,
  String.raw`{"receipt_id": "rcpt-0000000000000002", "agent_id": "agent-a", "action": "pay", "action_kind": "tool", "request_id": "r-py-2", "inputs": {"args": [], "kwargs": {"name": "caf\u00e9 \u2615 \ud834\udd1e", "lone": "\ud800", "lone2": "x\udfffy", "ls": "a\u2028b\u2029c"}}, "outputs": {"note": "ok\n{\"receipt_id\": \"rcpt-ffffffffffffffff\"}\r\n"}, "status": "completed", "timestamp": 1767225600.0, "signature": "c145eaadcf0c4b67fa5cb18b6bbd4fa5c0191f4d6355e4d8c63fd020beee3e95", "error": null}`,
  String.raw`{"receipt_id": "rcpt-0000000000000003", "agent_id": "agent-a", "action": "pay", "action_kind": "tool", "request_id": "r-py-3", "inputs": {"args": [], "kwargs": {"__proto__": {"x": 1}, "constructor": 1}}, "outputs": {"chain": {"ledger": "agent-a", "seq": 0, "prev": null, "digest": "00", "mac": "00"}}, "status": "failed", "timestamp": 1767225601.25, "signature": "f4a9e20a4a0462bc0f5cb1bf9b1dc2f11e1bd42ab6e63fa47de2da0ad2d56523", "error": "ValueError: bad\nline"}`,
  `{"receipt_id": "rcpt-0000000000000004", "agent_id": "agent-a", "action": "pay", "action_kind": "tool", "request_id": "r-py-4", "inputs": {"args": [], "kwargs": {"t": [1.0, 2, -0.0, 0.1, 1e+300, 12345678901234567890]}}, "outputs": null, "status": "completed", "timestamp": 1767225600.0, "signature": "85f4ad86cbcacb8baa770d83f054ef73bcd2037923a4c01876b7131956789e20", "error": null}`,
]

const dir = mkdtempSync(join(tmpdir(), "mycelium-adv-export-"))
const servers: Server[] = []
afterAll(() => {
  for (const s of servers) s.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("receipts export round trip (adversarial)", () => {
  it("Python-written, chained and unchained, HMAC and JWS receipts export into a file that verifies, value for value", async () => {
    const file = join(dir, "receipts.jsonl")
    writeFileSync(file, `${PYTHON_LINES.join("\n")}\n`)
    const store = new FileReceiptStore(file)
    const { privateKey, publicKey } = await generateKeyPair("EdDSA", { extractable: true })
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "EdDSA" }] }
    const jws = jwsReceiptSigner({ privateKey, alg: "EdDSA", kid: "k1" })
    const emitters = [
      new ReceiptEmitter({ signer: hmacReceiptSigner(PY_KEY), store, agentId: "agent-a" }),
      new ReceiptEmitter({ signer: jws, store, agentId: "agent-j" }),
      new ReceiptEmitter({ signer: hmacReceiptSigner(PY_KEY), store, agentId: "agent-u", chain: false }),
      new ReceiptEmitter({ signer: jws, store, agentId: "agent-v", chain: false }),
    ]
    // This port's own receipts interleaved, with text that a line-based format could trip on.
    for (let i = 0; i < 12; i++)
      await emitters[i % 4]?.emit({
        action: "send\u2028payment",
        actionKind: i % 3 ? "tool" : "task",
        requestId: `r-${i}\n{"x":1}`,
        kwargs: { lone: "\udc00", n: i + 0.5, big: 2 ** 60, chain: { seq: i } },
        status: i % 5 ? "completed" : "failed",
        outputs: i % 2 ? { chain: null, "\u0000": "\r" } : [i, "é"],
        ...(i % 5 ? {} : { error: "Boom: \n second line" }),
      })
    const keys = { hmac: PY_KEY, jws: jwksVerifier(jwks) }
    const stored = await store.list()
    expect(stored).toHaveLength(16)
    // chain: false receipts after chained ones: another writer's, which the verifier is told to allow.
    expect(await verifyReceipts(stored, keys, { allowUnchained: true })).toMatchObject({
      ok: true,
      valid: 16,
    })

    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: tokenAuth(TOKEN),
      receipts: () => ({ emitter: emitters[0] as ReceiptEmitter, keys }),
    })
    const server = await serve(app.fetch, 0)
    servers.push(server)
    let text = ""
    const n = await exportReceipts({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      token: TOKEN,
      write: (t) => {
        text += t
      },
    })
    expect(n).toBe(16)
    // One receipt a line, whatever the receipts hold.
    expect(text.split("\n")).toHaveLength(17)
    const out = join(dir, "export.jsonl")
    writeFileSync(out, text)
    // What `mycelium receipts verify FILE --allow-unchained` does with the file.
    const exported = await new FileReceiptStore(out).list()
    expect(await verifyReceipts(exported, keys, { allowUnchained: true })).toMatchObject({
      ok: true,
      valid: 16,
    })
    // Exactly the stored receipts: the forms (boxed floats, bigints) included, chains where there were chains.
    expect(exported).toEqual(stored)
    expect(exported.map((r: Receipt) => r.chain?.ledger ?? null)).toEqual([
      ...[null, null, null, null],
      ...[1, 2, 3].flatMap(() => ["agent-a", "agent-j", null, null]),
    ])
    // The Python lines go out byte for byte as the original wrote them.
    expect(text.split("\n").slice(0, 4)).toEqual(PYTHON_LINES)
    expect(readFileSync(file, "utf8").startsWith(PYTHON_LINES.join("\n"))).toBe(true)
  })
})

/** A hostile API: every request gets `body` as one export page. */
async function hostile(body: string): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/x-ndjson" })
    res.end(body)
  })
  servers.push(server)
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe("receipts export against a hostile server (adversarial)", () => {
  it("what it writes is ASCII in the writers' own form: raw C1 controls or bidi overrides in a string go out escaped", async () => {
    // Valid JSON (only characters below U+0020 must be escaped), so a receipt's shape check passes it; printed raw,
    // U+009B is a terminal's CSI and U+202E reorders what the auditor reads.
    const line = PYTHON_LINES[1]?.replace("caf\\u00e9", "\u009b31m\u202e") as string
    const raw = line.replace("\\u009b", "\u009b").replace("\\u202e", "\u202e")
    expect(raw).toContain("\u009b")
    let text = ""
    const n = await exportReceipts({
      url: await hostile(`${raw}\n`),
      write: (t) => {
        text += t
      },
    })
    expect(n).toBe(1)
    expect(/^[\x20-\x7e\n]*$/.test(text)).toBe(true)
    expect(text).toContain("\\u009b31m\\u202e")
  })

  it("-o never writes through a file planted at its partial path (a symlink to another file)", async () => {
    const victim = join(dir, "victim.txt")
    writeFileSync(victim, "precious\n")
    const out = join(dir, "planted.jsonl")
    symlinkSync(victim, `${out}.partial-${process.pid}`)
    const url = await hostile(`${PYTHON_LINES[0]}\n`)
    const saved = process.env.MYCELIUM_TOKEN
    delete process.env.MYCELIUM_TOKEN
    const outcome = await receiptsCommand(["export", "--url", url, "-o", out]).then(
      (code) => code,
      (e: Error) => e.message,
    )
    if (saved !== undefined) process.env.MYCELIUM_TOKEN = saved
    expect(readFileSync(victim, "utf8")).toBe("precious\n")
    expect(String(outcome)).toContain("partial")
    expect(existsSync(out)).toBe(false)
  })
})
