import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../../src/adapters/file-receipts.ts"
import {
  AuditReceiptError,
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  type ReceiptInit,
  type ReceiptStore,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"
import { tempDirs } from "../../temp-dirs.ts"

const KEY = "adversarial-sign-key"
const freshDir = tempDirs("rcpt-adv-")
const tmpFile = () => {
  const dir = freshDir()
  return join(dir, "receipts.jsonl")
}

const emitter = (store: ReceiptStore = new MemoryReceiptStore()) =>
  new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "agent-α" })

const base: ReceiptInit = { action: "pay", actionKind: "tool", requestId: "r-1", status: "completed" }

describe("drafts that could never verify are refused before signing", () => {
  const hostile: Array<[string, Record<string, unknown>]> = [
    ["action a number", { action: 5 }],
    ["actionKind not tool or task", { actionKind: "evil" }],
    // The original's _emit: "Cannot emit receipt for in-flight status".
    ["status in-flight", { status: "in-flight" }],
    ["status IN_FLIGHT", { status: "IN_FLIGHT" }],
    ["requestId missing", { requestId: undefined }],
    ["error an Error object", { status: "failed", error: new Error("x") }],
    ["args not an array", { args: "abc" }],
    ["kwargs an array", { kwargs: [1, 2] }],
    ["timestamp a string", { timestamp: "1767225600" }],
    ["timestamp NaN", { timestamp: Number.NaN }],
    ["timestamp Infinity", { timestamp: Number.POSITIVE_INFINITY }],
  ]
  for (const [name, patch] of hostile)
    it(name, async () => {
      const store = new MemoryReceiptStore()
      const e = emitter(store)
      await expect(e.emit({ ...base, ...patch } as unknown as ReceiptInit)).rejects.toBeInstanceOf(
        AuditReceiptError,
      )
      expect(await store.list()).toEqual([])
    })

  it("outputs with a cycle: an AuditReceiptError, not a stack overflow", async () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const err = await emitter()
      .sign({ ...base, outputs: cyclic })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(AuditReceiptError)
    expect((err as Error).message).toMatch(/must be JSON/)
  })

  it("a signer of the caller's own that answers no signature string: refused, nothing stored", async () => {
    // A KMS client answering bytes or an object: the receipt was stored, the call succeeded, and no verifier could
    // ever read it (bad_shape, or bad_signature for "").
    for (const answer of [undefined, { signature: "ab" }, new Uint8Array(32), ""]) {
      const store = new MemoryReceiptStore()
      const sign = async () => answer as unknown as string
      const e = new ReceiptEmitter({ signer: { kind: "hmac", sign }, store, agentId: "a" })
      await expect(e.emit(base)).rejects.toBeInstanceOf(AuditReceiptError)
      // Unchained, the record's own signature is the only one checked (the link's refused it above).
      const unchained = new ReceiptEmitter({
        signer: { kind: "hmac", sign },
        store,
        agentId: "a",
        chain: false,
      })
      await expect(unchained.emit(base)).rejects.toBeInstanceOf(AuditReceiptError)
      // The link's mac too, for a record signed by a signer that then fails.
      const good = await emitter().sign(base)
      const linked = new ReceiptEmitter({ signer: { kind: "hmac", sign }, store, agentId: "a" })
      await expect(linked.append(good)).rejects.toBeInstanceOf(AuditReceiptError)
      expect(await store.list()).toEqual([])
    }
  })
})

describe("emitter options", () => {
  it("an empty chain name is refused, not taken for chain: false", () => {
    const options = { signer: hmacReceiptSigner(KEY), store: new MemoryReceiptStore(), agentId: "a" }
    expect(() => new ReceiptEmitter({ ...options, chain: "" })).toThrow(AuditReceiptError)
    expect(new ReceiptEmitter({ ...options, chain: false }).chain).toBeNull()
  })

  it("an empty agentId or a missing signing key is refused, as the original's AuditReceiptEmitter refuses them", () => {
    const options = { signer: hmacReceiptSigner(KEY), store: new MemoryReceiptStore(), agentId: "a" }
    expect(() => new ReceiptEmitter({ ...options, agentId: "" })).toThrow(AuditReceiptError)
    expect(() => hmacReceiptSigner("")).toThrow(AuditReceiptError)
  })
})

describe("the signed text is the stored text", () => {
  it("a getter that changes between reads is read once: the stored receipt is the signed one", async () => {
    let reads = 0
    const outputs = {
      get amount() {
        reads++
        return reads * 100
      },
    }
    const store = new MemoryReceiptStore()
    const e = emitter(store)
    const signed = await e.sign({ ...base, outputs })
    await e.append(signed)
    expect(reads).toBe(1)
    const [stored] = await store.list()
    expect(stored?.outputs).toEqual({ amount: 100 })
    expect((await verifyReceipts(await store.list(), { hmac: KEY }, { requireChain: true })).ok).toBe(true)
  })

  for (const kind of ["memory", "file"] as const)
    it(`${kind}: __proto__ keys, lone surrogates, NUL, non-ASCII and a 2 MB output survive the round trip`, async () => {
      const store = kind === "memory" ? new MemoryReceiptStore() : new FileReceiptStore(tmpFile())
      const e = emitter(store)
      await e.emit({
        ...base,
        action: "pay\u0000\ud800",
        requestId: "r-\udc00-\u{1f600}",
        kwargs: JSON.parse('{"__proto__": {"admin": true}, "note": "caf\\u00e9\\n"}'),
        outputs: { big: "x".repeat(2_000_000), lone: "\udfff", nul: "a\u0000b" },
        status: "failed",
        error: "\ud83d",
      })
      const receipts = await store.list()
      const [r] = receipts
      expect(Object.hasOwn(r?.inputs.kwargs ?? {}, "__proto__")).toBe(true)
      expect(r?.action).toBe("pay\u0000\ud800")
      expect(r?.error).toBe("\ud83d")
      expect((r?.outputs as { big: string } | undefined)?.big).toHaveLength(2_000_000)
      expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toEqual({
        ok: true,
        valid: 1,
        failures: [],
      })
      // One changed character, even an unpaired surrogate for another, is detected.
      const edited = { ...r, error: "\ud83e" }
      expect((await verifyReceipts([edited], { hmac: KEY })).failures.map((f) => f.reason)).toEqual([
        "bad_signature",
        "bad_link",
      ])
    })
})
