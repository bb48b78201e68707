// GET /v1/receipts?format=jsonl: an export an auditor downloads verifies offline, including receipts the Python
// original signed over `100.0`, `-0.0` or an integer beyond 2^53, which plain JSON cannot carry.
import { Hono } from "hono"
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { parseReceiptJson } from "../../src/adapter-kit.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { receiptPayloadText } from "../../src/core/receipts/record.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  verifyReceipts,
} from "../../src/receipts.ts"

const SECRET = "test-secret-with-enough-entropy-0123456789"
const KEY = "receipt-key"
const reader = async () => ({
  authorization: `Bearer ${await new SignJWT({ tenant: "a", scope: "ledger:reader" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("auditor@example")
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(SECRET))}`,
})

// A receipt as the original writes it: its values in Python's number forms, signed over exactly those forms.
const PYTHON_LINE =
  '{"receipt_id": "rcpt-00000000000000aa", "agent_id": "agent-a", "action": "pay", "action_kind": "tool", ' +
  '"request_id": "r-py", "inputs": {"args": [], "kwargs": {"amount": 100.0, "wei": 1152921504606846977}}, ' +
  '"outputs": {"paid": 100.0, "refund": -0.0}, "status": "completed", "timestamp": 1767225600.0, ' +
  '"signature": "", "error": null}'

async function served(count: number) {
  const store = new MemoryReceiptStore()
  const emitters = {
    a: new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "agent-a" }),
    b: new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "agent-b" }),
  }
  const read = parseReceiptJson(PYTHON_LINE) as AuditReceiptRecord
  await emitters.a.append({ ...read, signature: await hmacReceiptSigner(KEY).sign(receiptPayloadText(read)) })
  for (let i = 0; i < count; i++)
    await (i % 2 ? emitters.b : emitters.a).emit({
      action: "send_payment",
      actionKind: "tool",
      requestId: `r-${i}`,
      kwargs: { amount: 5 + i },
      status: "completed",
      outputs: { ok: true },
    })
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: jwtAuth({ secret: SECRET }),
    receipts: () => ({ emitter: emitters.a, keys: { hmac: KEY } }),
  })
  return { app, store }
}

/** Follows the Link headers from `first`, as an auditor's script would; returns the pages' text and the links. */
async function download(fetcher: { request: Hono["request"] }, first: string) {
  const headers = await reader()
  let url: URL | null = new URL(first, "http://ledger.test")
  let text = ""
  const links: string[] = []
  while (url) {
    const r = await fetcher.request(url.pathname + url.search, { headers })
    expect(r.status, await r.clone().text()).toBe(200)
    expect(r.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8")
    text += await r.text()
    const link = r.headers.get("link")
    if (link) links.push(link)
    const next = link ? /^<([^>]*)>; rel="next"$/.exec(link)?.[1] : undefined
    url = next === undefined ? null : new URL(next, url)
  }
  return { text, links }
}

const parse = (text: string): Receipt[] =>
  text
    .trim()
    .split("\n")
    .map((l) => parseReceiptJson(l) as Receipt)

describe("GET /v1/receipts?format=jsonl", () => {
  it("pages through Link headers into a file whose every receipt verifies offline, chains included", async () => {
    const { app, store } = await served(6)
    const { text, links } = await download(app, "/v1/receipts?format=jsonl&limit=3")
    expect(links).toEqual([
      '<?format=jsonl&limit=3&cursor=3>; rel="next"',
      '<?format=jsonl&limit=3&cursor=6>; rel="next"',
    ])
    const lines = text.trim().split("\n")
    expect(lines).toHaveLength(7)
    // The exact forms the signature covers are on the wire.
    expect(lines[0]).toContain('"kwargs": {"amount": 100.0, "wei": 1152921504606846977}')
    expect(lines[0]).toContain('"outputs": {"paid": 100.0, "refund": -0.0}')
    expect(lines[0]).toContain('"timestamp": 1767225600.0')
    expect(lines[0]).toMatch(
      /, "chain": \{"ledger": "agent-a", "seq": 0, "prev": null, "digest": "[0-9a-f]{64}"/,
    )
    const exported = parse(text)
    expect(exported.map((r) => r.receipt_id)).toEqual((await store.list()).map((r) => r.receipt_id))
    const report = await verifyReceipts(exported, { hmac: KEY }, { requireChain: true })
    expect(report).toMatchObject({ ok: true, valid: 7, failures: [] })
  })

  it("the plain JSON page of the same receipts does not verify offline: that is what the format is for", async () => {
    const { app } = await served(1)
    const r = await app.request("/v1/receipts", { headers: await reader() })
    const { receipts } = (await r.json()) as { receipts: Receipt[] }
    const report = await verifyReceipts(receipts, { hmac: KEY })
    expect(report.ok).toBe(false)
    expect(report.failures.map((f) => [f.index, f.reason])).toEqual([
      [0, "bad_signature"],
      [0, "bad_link"],
    ])
  })

  it("an edited, dropped or reordered line of the export fails verification", async () => {
    const { app } = await served(4)
    const { text } = await download(app, "/v1/receipts?format=jsonl")
    const lines = text.trim().split("\n")
    const verify = async (ls: string[]) =>
      (await verifyReceipts(parse(ls.join("\n")), { hmac: KEY }, { requireChain: true })).failures.map(
        (f) => f.reason,
      )
    expect(await verify(lines)).toEqual([])
    expect(
      await verify([(lines[0] as string).replace('"paid": 100.0', '"paid": 100.5'), ...lines.slice(1)]),
    ).toContain("bad_signature")
    expect(
      await verify([(lines[0] as string).replace('"refund": -0.0', '"refund": 0.0'), ...lines.slice(1)]),
    ).toContain("bad_signature")
    expect((await verify([lines[0] as string, ...lines.slice(2)])).length).toBeGreaterThan(0)
    expect(
      (await verify([lines[2] as string, lines[1] as string, lines[0] as string, ...lines.slice(3)])).length,
    ).toBeGreaterThan(0)
  })

  it("filters ride along in the Link, which resolves under a mount prefix too", async () => {
    const { app } = await served(6)
    const outer = new Hono().route("/ledger", app)
    const { text, links } = await download(outer, "/ledger/v1/receipts?format=jsonl&agent_id=agent-b&limit=2")
    expect(links[0]).toBe('<?format=jsonl&agent_id=agent-b&limit=2&cursor=5>; rel="next"')
    const exported = parse(text)
    expect(exported.map((r) => r.agent_id)).toEqual(["agent-b", "agent-b", "agent-b"])
    expect(await verifyReceipts(exported, { hmac: KEY }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 3,
    })
  })

  it("an unknown format is 400 invalid_query; an empty tenant is an empty body without a Link", async () => {
    const { app } = await served(0)
    for (const q of ["?format=xml", "?format=", "?format=JSONL"]) {
      const r = await app.request(`/v1/receipts${q}`, { headers: await reader() })
      expect([q, r.status, ((await r.json()) as { error: { code: string } }).error.code]).toEqual([
        q,
        400,
        "invalid_query",
      ])
    }
    const empty = await app.request("/v1/receipts?format=jsonl&cursor=1", { headers: await reader() })
    expect([empty.status, await empty.text(), empty.headers.get("link")]).toEqual([200, "", null])
  })
})
