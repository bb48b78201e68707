// Adversarial review of the hash chain: a store writer drops, duplicates, reorders, splices or replays receipts.
import { describe, expect, it } from "vitest"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  recordOf,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"

const KEY = "adversarial-chain-key"

async function chainOf(
  n: number,
  agentId = "payment-agent",
  key = KEY,
  t = 1_767_225_600,
  step = 1,
): Promise<Receipt[]> {
  const store = new MemoryReceiptStore()
  const e = new ReceiptEmitter({
    signer: hmacReceiptSigner(key),
    store,
    agentId,
    now: () => {
      t += step
      return t - step
    },
  })
  for (let i = 0; i < n; i++)
    await e.emit({
      action: "send_payment",
      actionKind: "tool",
      requestId: `req-${i}`,
      kwargs: { amount: 100 },
      status: "completed",
    })
  return store.list()
}

const reasons = (v: { failures: Array<{ index: number; reason: string }> }) =>
  v.failures.map((f) => `${f.index}:${f.reason}`)
const at = (rs: readonly Receipt[], i: number): Receipt => rs[i] as Receipt
const headOf = (r: Receipt) => ({ seq: r.chain?.seq ?? -1, digest: r.chain?.digest ?? "" })

describe("chains under attack", () => {
  it("a cut tail passes without heads (documented) and is truncated against the known head", async () => {
    const rs = await chainOf(4)
    expect((await verifyReceipts(rs.slice(0, 2), { hmac: KEY }, { requireChain: true })).ok).toBe(true)
    const heads = { "payment-agent": headOf(at(rs, 3)) }
    expect(reasons(await verifyReceipts(rs.slice(0, 2), { hmac: KEY }, { heads }))).toEqual(["1:truncated"])
    expect(reasons(await verifyReceipts([], { hmac: KEY }, { heads }))).toEqual(["-1:truncated"])
    // A tail replaced by another of the same length (a fork at the head) is caught by the digest.
    const other = await chainOf(4, "payment-agent")
    const v = await verifyReceipts([...rs.slice(0, 3), at(other, 3)], { hmac: KEY }, { heads })
    expect(reasons(v)).toEqual(["3:broken_chain", "3:truncated"])
  })

  it("a duplicated receipt, at once or later", async () => {
    const rs = await chainOf(3)
    expect(reasons(await verifyReceipts([...rs, at(rs, 1)], { hmac: KEY }))).toEqual([
      "3:reorder",
      "3:duplicate",
    ])
    expect(
      reasons(await verifyReceipts([at(rs, 0), at(rs, 1), at(rs, 1), at(rs, 2)], { hmac: KEY })),
    ).toEqual(["2:duplicate"])
  })

  it("a replayed copy with its link stripped is a duplicate, not one more valid receipt", async () => {
    const rs = await chainOf(3)
    // The original's records carry no link; a stripped copy is a well-signed record. Counting it twice (two
    // payments) must not pass: the receipt id is the record's identity.
    const replay = recordOf(at(rs, 1))
    const v = await verifyReceipts([...rs, replay], { hmac: KEY })
    expect(reasons(v)).toEqual(["3:duplicate"])
    expect(v.valid).toBe(3)
    // Unchained receipts (the original's, or chain: false) replayed as is.
    const plain = rs.map(recordOf)
    expect(reasons(await verifyReceipts([...plain, at(plain, 0)], { hmac: KEY }))).toEqual(["3:duplicate"])
  })

  it("a stripped link in the middle leaves a gap and an unchained receipt, with requireChain or without", async () => {
    const rs = await chainOf(3)
    const stripped = [at(rs, 0), recordOf(at(rs, 1)), at(rs, 2)]
    expect(reasons(await verifyReceipts(stripped, { hmac: KEY }))).toEqual(["1:unchained", "2:gap"])
    expect(reasons(await verifyReceipts(stripped, { hmac: KEY }, { requireChain: true }))).toEqual([
      "1:unchained",
      "2:gap",
    ])
  })

  it("a receipt deleted and the links after it stripped: each stripped one is named, even moved to the front", async () => {
    const rs = await chainOf(5)
    const cut = [at(rs, 0), at(rs, 1), recordOf(at(rs, 3)), recordOf(at(rs, 4))]
    expect(reasons(await verifyReceipts(cut, { hmac: KEY }))).toEqual(["2:unchained", "3:unchained"])
    const moved = [recordOf(at(rs, 3)), recordOf(at(rs, 4)), at(rs, 0), at(rs, 1)]
    expect(reasons(await verifyReceipts(moved, { hmac: KEY }))).toEqual(["0:unchained", "1:unchained"])
    // Unchained receipts before the chains (the original's history) still verify; after them, even another
    // agent's (a chain: false emitter) need allowUnchained, as agents may share a chain.
    const early = (await chainOf(2, "payment-agent", KEY, 1_767_225_000)).map(recordOf)
    const other = (await chainOf(1, "other-agent")).map(recordOf)
    expect(await verifyReceipts([...early, ...rs], { hmac: KEY })).toMatchObject({ ok: true })
    expect(reasons(await verifyReceipts([...early, ...rs, ...other], { hmac: KEY }))).toEqual(["7:unchained"])
    expect(
      await verifyReceipts([...early, ...rs, ...other], { hmac: KEY }, { allowUnchained: true }),
    ).toMatchObject({ ok: true })
    // Another writer appending unchained receipts to the same store (a Python worker) is the caller's to allow.
    expect(await verifyReceipts(cut, { hmac: KEY }, { allowUnchained: true })).toMatchObject({
      ok: true,
      valid: 4,
    })
  })

  it("a stripped receipt signed in the same millisecond as the first chained one still may not precede the chain", async () => {
    // A batch signed within one millisecond: every timestamp is equal. B deleted, C's link stripped and C moved to
    // the front must not pass as the original's history ("at or before its own").
    const rs = await chainOf(3, "payment-agent", KEY, 1_767_225_600.123, 0)
    expect(reasons(await verifyReceipts([recordOf(at(rs, 2)), at(rs, 0)], { hmac: KEY }))).toEqual([
      "0:unchained",
    ])
  })

  it("an edited link digest is a bad link even at the end of the chain, where no successor points at it", async () => {
    const rs = await chainOf(2)
    const r = at(rs, 1)
    const forged = { ...r, chain: { ...(r.chain as NonNullable<Receipt["chain"]>), digest: "0".repeat(64) } }
    for (const options of [{}, { requireChain: true }])
      expect(reasons(await verifyReceipts([at(rs, 0), forged], { hmac: KEY }, options))).toEqual([
        "1:bad_link",
      ])
  })

  it("a chain two agents share: the links of one agent's receipts stripped after the other's deletion are named", async () => {
    const store = new MemoryReceiptStore()
    let t = 1000
    const agent = (agentId: string) =>
      new ReceiptEmitter({
        signer: hmacReceiptSigner(KEY),
        store,
        agentId,
        chain: "payments",
        now: () => t++,
      })
    const [billing, refunds] = [agent("billing"), agent("refunds")]
    for (const [e, id] of [
      [billing, "b0"],
      [billing, "b1"],
      [refunds, "r2"],
      [refunds, "r3"],
    ] as const)
      await e.emit({ action: "pay", actionKind: "tool", requestId: id, status: "completed" })
    const rs = await store.list()
    expect(await verifyReceipts(rs, { hmac: KEY })).toMatchObject({ ok: true, valid: 4 })
    // billing #1 deleted, refunds' #2 and #3 stripped: refunds has no chained receipt left to compare with.
    const cut = [at(rs, 0), recordOf(at(rs, 2)), recordOf(at(rs, 3))]
    expect(reasons(await verifyReceipts(cut, { hmac: KEY }))).toEqual(["1:unchained", "2:unchained"])
    const moved = [recordOf(at(rs, 2)), recordOf(at(rs, 3)), at(rs, 0)]
    expect(reasons(await verifyReceipts(moved, { hmac: KEY }))).toEqual(["0:unchained", "1:unchained"])
  })

  it("input that is not an array fails instead of verifying nothing; null options are the defaults", async () => {
    const rs = await chainOf(1)
    const notArray = { index: -1, receiptId: null, reason: "bad_shape", message: "not an array of receipts" }
    const verifyAny = verifyReceipts as (
      r: unknown,
      k: unknown,
      o?: unknown,
    ) => ReturnType<typeof verifyReceipts>
    for (const input of [
      Promise.resolve(rs),
      { receipts: rs, cursor: null },
      { 0: at(rs, 0) },
      null,
      undefined,
    ])
      expect(await verifyAny(input, { hmac: KEY })).toEqual({ ok: false, valid: 0, failures: [notArray] })
    expect(await verifyAny(rs, { hmac: KEY }, null)).toEqual({ ok: true, valid: 1, failures: [] })
  })

  it("two chains spliced: interleaved genuine chains verify, a chain re-labelled with another's name does not", async () => {
    const a = await chainOf(3, "agent-a")
    const b = await chainOf(3, "agent-b")
    const mixed = [at(a, 0), at(b, 0), at(a, 1), at(b, 1), at(b, 2), at(a, 2)]
    expect((await verifyReceipts(mixed, { hmac: KEY }, { requireChain: true })).ok).toBe(true)
    // b's receipt #1 moved into chain a: its link no longer matches.
    const b1 = at(b, 1)
    const moved = { ...b1, chain: { ...(b1.chain as NonNullable<Receipt["chain"]>), ledger: "agent-a" } }
    expect(reasons(await verifyReceipts([at(a, 0), moved], { hmac: KEY }))).toEqual([
      "1:bad_link",
      "1:broken_chain",
    ])
    // Two tenants with one agent id and one key: their chains collide, and the collision is a fork.
    const other = await chainOf(2, "agent-a")
    expect(reasons(await verifyReceipts([...a, at(other, 1)], { hmac: KEY }))).toEqual([
      "3:reorder",
      "3:fork",
    ])
  })

  it("a link that points at itself or whose seq is edited fails its digest", async () => {
    const rs = await chainOf(3)
    const r = at(rs, 1)
    const link = r.chain as NonNullable<Receipt["chain"]>
    const self = { ...r, chain: { ...link, prev: link.digest } }
    expect(reasons(await verifyReceipts([at(rs, 0), self, at(rs, 2)], { hmac: KEY }))).toEqual([
      "1:bad_link",
      "1:broken_chain",
    ])
    const renumbered = { ...r, chain: { ...link, seq: 0 } }
    const v = await verifyReceipts([at(rs, 0), renumbered, at(rs, 2)], { hmac: KEY })
    expect(v.failures.map((f) => f.reason)).toContain("bad_link")
  })

  it("a chain named like an Object.prototype member is an ordinary chain", async () => {
    const rs = await chainOf(2, "constructor")
    expect((await verifyReceipts(rs, { hmac: KEY }, { requireChain: true, heads: {} })).ok).toBe(true)
    const heads = { constructor: headOf(at(rs, 1)) }
    expect(reasons(await verifyReceipts(rs.slice(0, 1), { hmac: KEY }, { heads }))).toEqual(["0:truncated"])
  })

  it("a known head the chain grew past must still be in it: a rewritten history is a fork", async () => {
    const rs = await chainOf(4)
    const heads = { "payment-agent": headOf(at(rs, 1)) }
    expect((await verifyReceipts(rs, { hmac: KEY }, { heads })).ok).toBe(true)
    // The key holder re-signs the chain from #1 on (another copy) and extends it past the head the auditor kept.
    const rewritten = await chainOf(4)
    const v = await verifyReceipts([at(rs, 0), ...rewritten.slice(1)], { hmac: KEY }, { heads })
    expect(reasons(v)).toEqual(["1:broken_chain", "1:fork"])
    expect(reasons(await verifyReceipts(rewritten, { hmac: KEY }, { heads }))).toEqual(["1:fork"])
  })

  it("a head that is not {seq, digest} fails closed instead of switching the truncation check off", async () => {
    const rs = await chainOf(3)
    for (const head of [{ seq: Number.NaN, digest: "x" }, { seq: "2", digest: "x" }, { seq: 1.5 }, null, 7]) {
      const v = await verifyReceipts(
        rs.slice(0, 2),
        { hmac: KEY },
        { heads: { "payment-agent": head as never } },
      )
      expect(reasons(v)).toEqual(["1:truncated"])
      const none = await verifyReceipts([], { hmac: KEY }, { heads: { other: head as never } })
      expect(reasons(none)).toEqual(["-1:truncated"])
    }
  })
})
