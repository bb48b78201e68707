// The suite every ReceiptStore must pass (`mycelium-runtime/conformance`, docs/adapter-kit.md). Runs in Node, workerd
// and Chromium: vitest APIs only.
import { describe, expect, it } from "vitest"
import {
  AuditReceiptError,
  hmacReceiptSigner,
  type Receipt,
  ReceiptEmitter,
  type ReceiptListOptions,
  type ReceiptStore,
  verifyReceipts,
} from "../receipts.ts"
import type { ReceiptStoreFixtureFactory } from "./factory.ts"

/** Every page from the start, concatenated; fails on a page over `limit` or a walk that does not end. */
async function walk(store: ReceiptStore, options: ReceiptListOptions, from?: string) {
  const out: Receipt[] = []
  const pages: number[] = []
  let cursor: string | null | undefined = from
  let last: string | undefined = from
  do {
    last = cursor ?? undefined
    const page = await store.listPage({ ...options, ...(cursor ? { cursor } : {}) })
    expect(page.receipts.length).toBeLessThanOrEqual(options.limit ?? 100)
    out.push(...page.receipts)
    pages.push(page.receipts.length)
    cursor = page.cursor
    if (pages.length > 200) throw new Error("pages never end")
  } while (cursor !== null)
  // `from`: the cursor the last page was asked with (undefined: the start).
  return { ids: out.map((r) => r.receipt_id), pages, receipts: out, from: last }
}

export function testReceiptStore(name: string, factory: ReceiptStoreFixtureFactory) {
  describe(`ReceiptStore conformance: ${name}`, () => {
    it("two handles appending concurrently keep one unforked chain per agent; delicate values still verify", async () => {
      const { storage, peer } = await factory()
      const emit = (store: ReceiptStore, agentId: string) =>
        new ReceiptEmitter({ signer: hmacReceiptSigner("conformance-key"), store, agentId })
      const writers = [
        emit(storage, "agent-1"),
        emit(peer ?? storage, "agent-1"),
        emit(peer ?? storage, "agent-2"),
      ]
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          (writers[i % 3] as ReceiptEmitter).emit({
            action: "t",
            actionKind: i % 2 ? "tool" : "task",
            requestId: `r${i}`,
            kwargs: { i },
            outputs: { n: [1, 2.5, -0, 1e21], note: "café ☕ 𝄞" },
            status: i % 5 ? "completed" : "failed",
            error: i % 5 ? null : "Error: x",
          }),
        ),
      )
      const all = await storage.list()
      expect(all).toHaveLength(24)
      const one = await storage.list({ agentId: "agent-1" })
      expect(one.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 16 }, (_, i) => i))
      expect((await storage.list({ ledger: "agent-2" })).map((r) => r.chain?.seq)).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7,
      ])
      expect(Object.is((one[0]?.outputs as { n: number[] } | undefined)?.n[2], -0)).toBe(true)
      expect(await verifyReceipts(all, { hmac: "conformance-key" }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: 24,
      })
    })

    it("unchained receipts (chain: false) are stored as the original's records", async () => {
      const { storage } = await factory()
      const e = new ReceiptEmitter({
        signer: hmacReceiptSigner("k"),
        store: storage,
        agentId: "plain",
        chain: false,
      })
      await e.emit({ action: "a", actionKind: "task", requestId: "x", status: "completed" })
      const [r] = await storage.list({ agentId: "plain" })
      expect(r?.chain ?? null).toBeNull()
      expect(await verifyReceipts([r], { hmac: "k" })).toMatchObject({ ok: true })
    })

    it("pages concatenate to list() in append order, with and without filters; cursors resume after appends", async () => {
      const { storage } = await factory()
      const emitters = ["agent-1", "agent-2"].map(
        (agentId) => new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: storage, agentId }),
      )
      const emit = (i: number) =>
        (emitters[i % 3 === 0 ? 1 : 0] as ReceiptEmitter).emit({
          action: "t",
          actionKind: "task",
          requestId: `p${i}`,
          status: "completed",
        })
      for (let i = 0; i < 25; i++) await emit(i)
      const filters: ReceiptListOptions[] = [{}, { agentId: "agent-1" }, { ledger: "agent-2" }]
      for (const f of filters) {
        const want = (await storage.list(f)).map((r) => r.receipt_id)
        expect(want.length).toBeGreaterThan(5)
        for (const limit of [1, 3, 7, 100]) {
          const got = await walk(storage, { ...f, limit })
          expect(got.ids, `${JSON.stringify(f)} limit ${limit}`).toEqual(want)
        }
      }
      // Whole pages without a filter: limit 7 over 25 receipts is 7, 7, 7, 4.
      expect((await walk(storage, { limit: 7 })).pages).toEqual([7, 7, 7, 4])
      const chained = await walk(storage, { ledger: "agent-1", limit: 4 })
      expect(chained.receipts.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 16 }, (_, i) => i))

      // A cursor handed out before more appends resumes exactly after the receipts it covered.
      const first = await storage.listPage({ limit: 10 })
      expect(first.cursor).not.toBeNull()
      for (let i = 25; i < 30; i++) await emit(i)
      const rest = await walk(storage, { limit: 6 }, first.cursor as string)
      expect([...first.receipts.map((r) => r.receipt_id), ...rest.ids]).toEqual(
        (await storage.list()).map((r) => r.receipt_id),
      )
      expect(rest.ids).toHaveLength(20)
    })

    it("pages walked while other handles append see a prefix of the final list: no receipt twice, none skipped", async () => {
      const { storage, peer } = await factory()
      const e = (store: ReceiptStore, agentId: string) =>
        new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId })
      const writers = [e(storage, "w-1"), e(peer ?? storage, "w-1"), e(peer ?? storage, "w-2")]
      const appends = Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          (writers[i % 3] as ReceiptEmitter).emit({
            action: "t",
            actionKind: "task",
            requestId: `c${i}`,
            status: "completed",
          }),
        ),
      )
      const walked = await walk(storage, { limit: 2 })
      await appends
      const all = (await storage.list()).map((r) => r.receipt_id)
      expect(all).toHaveLength(30)
      expect(walked.ids).toEqual(all.slice(0, walked.ids.length))
      // The cursor the walk's last page started from, asked again now, gives that page and everything appended since.
      const before = walked.ids.length - (walked.pages.at(-1) ?? 0)
      const rest = await walk(storage, { limit: 4 }, walked.from)
      expect([...walked.ids.slice(0, before), ...rest.ids]).toEqual(all)
    })

    it("a page scans at most 20 x limit receipts: a filter matching nothing gives empty pages with a cursor", async () => {
      const { storage } = await factory()
      const e = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: storage, agentId: "only" })
      for (let i = 0; i < 45; i++)
        await e.emit({ action: "t", actionKind: "task", requestId: `s${i}`, status: "completed" })
      const first = await storage.listPage({ agentId: "nobody", limit: 1 })
      expect(first).toMatchObject({ receipts: [] })
      expect(first.cursor).not.toBeNull()
      // 45 receipts at 20 per page: 20, 20, 5 scanned; the third page reaches the end.
      expect((await walk(storage, { agentId: "nobody", limit: 1 })).pages).toEqual([0, 0, 0])
      expect((await walk(storage, { agentId: "only", limit: 2 })).ids).toHaveLength(45)
      // An empty store: one empty page, done.
      const { storage: empty } = await factory()
      expect(await empty.listPage()).toEqual({ receipts: [], cursor: null })
    })

    // Postgres failed on U+0000 as if it were down, and the driver sends an unpaired surrogate as U+FFFD: another
    // agent's receipts came back.
    it("a filter holding U+0000 or an unpaired surrogate matches no receipt of the U+FFFD name, in pages and list() alike", async () => {
      const { storage } = await factory()
      const e = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: storage, agentId: "odd-\ufffd" })
      for (let i = 0; i < 3; i++)
        await e.emit({ action: "t", actionKind: "task", requestId: `o${i}`, status: "completed" })
      for (const name of ["odd-\u0000", "odd-\ud800"])
        for (const f of [{ agentId: name }, { ledger: name }]) {
          expect(await storage.list(f), JSON.stringify(f)).toEqual([])
          expect((await walk(storage, { ...f, limit: 2 })).ids, JSON.stringify(f)).toEqual([])
        }
      expect((await walk(storage, { ledger: "odd-\ufffd", limit: 2 })).ids).toHaveLength(3)
    })

    // Postgres failed on an agent id holding U+0000 as if it were down, after the ledger had written the outcome.
    it("an agent id holding U+0000 or an unpaired surrogate is kept in its receipts, which its filter finds alone", async () => {
      const { storage } = await factory()
      const agents = ["who-\ufffd", "who-\u0000", "who-\ud800"]
      for (const agentId of agents) {
        const e = new ReceiptEmitter({
          signer: hmacReceiptSigner("k"),
          store: storage,
          agentId,
          chain: "who",
        })
        await e.emit({ action: "t", actionKind: "tool", requestId: agentId, status: "completed" })
      }
      for (const agentId of agents) {
        expect(
          (await storage.list({ agentId })).map((r) => r.request_id),
          JSON.stringify(agentId),
        ).toEqual([agentId])
        expect((await walk(storage, { agentId, limit: 1 })).receipts.map((r) => r.request_id)).toEqual([
          agentId,
        ])
      }
      const chain = await storage.list({ ledger: "who" })
      expect(await verifyReceipts(chain, { hmac: "k" }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: 3,
      })
    })

    // Postgres failed on U+0000 as if it were down, and the driver sends an unpaired surrogate as U+FFFD: two receipt
    // ids were one, and two chains one tail (each then read as missing receipts).
    it("a chain name or receipt id holding U+0000 or an unpaired surrogate is its own, or refused with AuditReceiptError before any write", async () => {
      const { storage } = await factory()
      const signer = hmacReceiptSigner("k")
      const emitter = (chain: string | false) =>
        new ReceiptEmitter({ signer, store: storage, agentId: "keys", chain })
      const init = { action: "t", actionKind: "tool", requestId: "r", status: "completed" } as const
      const refused = (got: unknown, what: string) => {
        expect(got, what).toBeInstanceOf(AuditReceiptError)
        expect((got as AuditReceiptError).code, what).toBe("audit_receipt_error")
      }
      await emitter("keys-\ufffd").emit(init)
      let kept = 1
      for (const chain of ["keys-\u0000", "keys-\ud800"]) {
        const got = await emitter(chain)
          .emit(init)
          .catch((e: unknown) => e)
        if (got instanceof Error) refused(got, JSON.stringify(chain))
        else {
          expect((got as Receipt).chain, JSON.stringify(chain)).toMatchObject({ ledger: chain, seq: 0 })
          kept++
        }
      }
      expect((await emitter("keys-\ufffd").emit(init)).chain?.seq).toBe(1)
      const signed = await emitter(false).sign(init)
      await storage.append({ ...signed, receipt_id: "rcpt-\ufffd" })
      const ids = ["rcpt-\ufffd"]
      for (const id of ["rcpt-\u0000", "rcpt-\ud800"]) {
        const got = await storage.append({ ...signed, receipt_id: id }).catch((e: unknown) => e)
        if (got instanceof Error) refused(got, JSON.stringify(id))
        else ids.push(id)
      }
      const all = await storage.list({ agentId: "keys" })
      expect(all).toHaveLength(kept + 1 + ids.length)
      expect(all.filter((r) => !r.chain).map((r) => r.receipt_id)).toEqual(ids)
      expect((await storage.list({ ledger: "keys-\ufffd" })).map((r) => r.chain?.seq)).toEqual([0, 1])
    })

    it("a forged cursor or a bad limit is refused with invalid_option", async () => {
      const { storage } = await factory()
      const e = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: storage, agentId: "f" })
      await e.emit({ action: "t", actionKind: "task", requestId: "f0", status: "completed" })
      for (const cursor of ["abc", "-1", "01", "1.5", "1e3", " 1", "", "9".repeat(16), "0x10"])
        await expect(storage.listPage({ cursor }), cursor).rejects.toMatchObject({ code: "invalid_option" })
      for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
        await expect(storage.listPage({ limit }), String(limit)).rejects.toMatchObject({
          code: "invalid_option",
        })
    })
  })
}
