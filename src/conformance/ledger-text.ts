// Text a store keeps or refuses (U+0000, unpaired surrogates, an error of several MB), through the ledger: a store
// that refused such a write after the body ran left the row IN_FLIGHT and told the caller the store was down.
import { expect, it } from "vitest"
import { newEntry } from "../adapter-kit.ts"
import {
  ActionLedger,
  LedgerConfigError,
  LedgerResultUnstorableError,
  type LedgerStorage,
} from "../core/index.ts"

const ids = async (rows: AsyncIterable<{ requestId: string }>): Promise<string[]> => {
  const out: string[] = []
  for await (const r of rows) out.push(r.requestId)
  return out
}

const BINDING = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } as const
const ODD = { nul: "a\u0000b", half: "\ud800x", pair: "\ud83d\ude00" }

export function ledgerTextCases(store: () => LedgerStorage, rid: (label: string) => string): void {
  const strict = () => store().limits?.validUnicodeOnly === true

  it("a result holding U+0000 or an unpaired surrogate is stored as returned, or completes as unstorable (validUnicodeOnly); it never runs twice", async () => {
    const ledger = new ActionLedger({ storage: store(), onWarning: () => {} })
    let runs = 0
    const fetchBlob = ledger.tool({ name: "fetch_blob", binding: BINDING }, async () => {
      runs++
      return ODD
    })
    const id = rid("odd-result")
    expect(await fetchBlob({ n: 1 }, { requestId: id })).toEqual(ODD)
    expect((await store().get(id))?.terminalOutcome).toBe("COMPLETED")
    const again = fetchBlob({ n: 1 }, { requestId: id })
    if (strict()) await expect(again).rejects.toBeInstanceOf(LedgerResultUnstorableError)
    else expect(await again).toEqual(ODD)
    expect(runs).toBe(1)
  })

  it("a failure whose text holds U+0000, an unpaired surrogate and 3 MB is recorded, cut to 4,096 characters with them replaced", async () => {
    const ledger = new ActionLedger({ storage: store(), onWarning: () => {} })
    const thrown = new Error(`bad\u0000\ud800${"x".repeat(3_000_000)}`)
    const charge = ledger.tool({ name: "charge", binding: BINDING }, async () => {
      throw thrown
    })
    const id = rid("odd-error")
    await expect(charge({ n: 1 }, { requestId: id })).rejects.toBe(thrown)
    const row = await store().get(id)
    expect(row?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(row?.error).toBe(`Error: bad\ufffd\ufffd${"x".repeat(4096 - 12)}`)
  })

  it("arguments holding U+0000 are stored, or refused before the claim (validUnicodeOnly)", async () => {
    const ledger = new ActionLedger({ storage: store(), onWarning: () => {} })
    let runs = 0
    const note = ledger.tool({ name: "note", binding: BINDING }, async (args: { text: string }) => {
      runs++
      return args.text.length
    })
    const id = rid("odd-args")
    const call = note({ text: ODD.nul }, { requestId: id })
    if (strict()) {
      await expect(call).rejects.toBeInstanceOf(LedgerConfigError)
      expect(await store().get(id)).toBeNull()
      expect(runs).toBe(0)
    } else {
      expect(await call).toBe(3)
      expect((await store().get(id))?.kwargs.text).toBe(ODD.nul)
      expect(runs).toBe(1)
    }
  })

  it("a result nested 950 deep is stored, or completes as unstorable over limits.maxDepth; it never runs twice", async () => {
    const ledger = new ActionLedger({ storage: store(), onWarning: () => {} })
    let deep: unknown = "leaf"
    for (let i = 0; i < 950; i++) deep = [deep]
    let runs = 0
    const nest = ledger.tool({ name: "nest", binding: BINDING }, async () => {
      runs++
      return deep
    })
    const id = rid("deep-result")
    expect(await nest({ n: 1 }, { requestId: id })).toBe(deep)
    const again = nest({ n: 1 }, { requestId: id })
    const max = store().limits?.maxDepth
    if (max !== undefined && max < 951)
      await expect(again).rejects.toBeInstanceOf(LedgerResultUnstorableError)
    else expect(await again).toEqual(deep)
    expect(runs).toBe(1)
  })

  // Postgres failed on U+0000 as if it were down, a driver or a Redis key read another id's row for a lone surrogate
  // (sent as U+FFFD), and a URL could not carry one at all (encodeURIComponent throws).
  it("get and findByDispatchId of an id holding U+0000 or an unpaired surrogate that no row has: null and none", async () => {
    const s = store()
    const base = rid("odd-get")
    await s.set(newEntry({ requestId: `${base}\ufffd`, tool: "t" }, 1))
    for (const id of [`${base}\u0000`, `${base}\ud800`, `${base}\udc00x`]) {
      expect(await s.get(id), JSON.stringify(id)).toBeNull()
      if (s.findByDispatchId) expect(await s.findByDispatchId(id), JSON.stringify(id)).toEqual([])
    }
  })

  // Postgres failed on U+0000 as if it were down, and a driver or a Redis key sends an unpaired surrogate as U+FFFD:
  // the rows of the U+FFFD prefix came back, and a page resumed after the U+FFFD id.
  it("a prefix holding U+0000 or an unpaired surrogate lists nothing; such a cursor is refused (validUnicodeOnly) or resumes after it", async () => {
    const s = store()
    const base = rid("odd-list")
    const kept = [`${base}\ufffd1`, `${base}\ufffd2`]
    for (const id of kept) await s.set(newEntry({ requestId: id, tool: "t" }, 1))
    for (const prefix of [`${base}\u0000`, `${base}\ud800`, `${base}\udc00`])
      expect(await ids(s.list({ prefix })), JSON.stringify(prefix)).toEqual([])
    for (const cursor of [`${base}\u0000`, `${base}\ud800`]) {
      const listed = ids(s.list({ prefix: base, cursor }))
      if (strict()) await expect(listed).rejects.toBeInstanceOf(LedgerConfigError)
      else expect(await listed).toEqual(kept)
    }
    expect(await ids(s.list({ prefix: `${base}\ufffd`, cursor: kept[0] }))).toEqual(kept.slice(1))
  })

  // An id cut by slice() can end in a pair's first half: Neon, Upstash/Redis and the HTTP store listed nothing for
  // it (no store can be sent the half alone) while the memory store listed the ids holding that pair there.
  it("a prefix ending in the first half of a surrogate pair lists the ids holding a pair there, as startsWith reads it", async () => {
    const s = store()
    const base = rid("half-list")
    const under = [`${base}\u{1F600}1`, `${base}\u{1F680}2`]
    for (const id of [...under, `${base}\u{1F900}`, `${base}\uffff`, `${base}\ufffd`])
      await s.set(newEntry({ requestId: id, tool: "t" }, 1))
    const prefix = `${base}\ud83d`
    expect(await ids(s.list({ prefix }))).toEqual(under)
    expect(await ids(s.list({ prefix, limit: 1 }))).toEqual(under.slice(0, 1))
    expect(await ids(s.list({ prefix, cursor: under[0] }))).toEqual(under.slice(1))
  })
}
