// Calls that used to claim a task and then fail before its body (no arguments object), and the receipt outages around
// a task's outcome and an operator's release: each says what was recorded and what was not, with a code.
import { describe, expect, it } from "vitest"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  type ReceiptStore,
} from "../../../src/receipts.ts"
import { TaskLedger, TaskReleaseRefusedError } from "../../../src/tasks.ts"

describe("a task called without an arguments object", () => {
  for (const args of [undefined, null]) {
    it(`${args}: runs as with {} (not claimed and left in flight)`, async () => {
      const ledger = new TaskLedger({ onWarning: () => {} })
      const seen: unknown[] = []
      const nightly = ledger.task({ name: "nightly" }, async (a: Record<string, unknown>) => {
        seen.push(a)
        return "ok"
      })
      const call = nightly as (a: unknown, meta?: { taskId?: string }) => Promise<string>
      await expect(call(args, { taskId: "N-1" })).resolves.toBe("ok")
      await expect(call(args)).resolves.toBe("ok")
      expect(seen).toEqual([{}, {}])
      expect((await ledger.list()).map((t) => [t.row.status, t.row.kwargs])).toEqual([
        ["completed", {}],
        ["completed", {}],
      ])
      // Same request id as {}: the stored result replays.
      await expect(nightly({})).resolves.toBe("ok")
      expect(seen).toHaveLength(2)
    })
  }
})

function receiptsWith(opts: { signerDown: () => boolean; storeDown: () => boolean }) {
  const inner = new MemoryReceiptStore()
  const store: ReceiptStore = {
    append: (r, c) =>
      opts.storeDown() ? Promise.reject(new Error("ECONNREFUSED receipts")) : inner.append(r, c),
    list: (o) => inner.list(o),
    listPage: (o) => inner.listPage(o),
  }
  const base = hmacReceiptSigner("k")
  const signer = {
    kind: base.kind,
    sign: (t: string) => (opts.signerDown() ? Promise.reject(new Error("KMS down")) : base.sign(t)),
  } as typeof base
  return { inner, emitter: new ReceiptEmitter({ signer, store, agentId: "a" }) }
}

describe("receipt outages", () => {
  it("a failed body whose receipt cannot be appended: the warning says the failure is recorded, its receipt is not", async () => {
    const { emitter } = receiptsWith({ signerDown: () => false, storeDown: () => true })
    const warnings: string[] = []
    const ledger = new TaskLedger({ receipts: emitter, onWarning: (m) => warnings.push(m) })
    const bad = ledger.task({ name: "bad" }, async () => {
      throw new Error("boom")
    })
    await expect(bad({}, { taskId: "bad" })).rejects.toThrow("boom")
    const t = await ledger.get("bad")
    expect(t?.row.status).toBe("failed")
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain("'bad' is recorded as failed")
    expect(warnings[0]).toContain(`receipt ${t?.lease?.receipt_ref} was not stored`)
    expect(warnings[0]).toContain("ECONNREFUSED receipts")
    expect(warnings[0]).not.toContain("could not record")
  })

  it("a release whose receipt cannot be signed is TaskReleaseRefusedError with the signer's error as cause; nothing changes", async () => {
    let signerDown = false
    const { emitter, inner } = receiptsWith({ signerDown: () => signerDown, storeDown: () => false })
    const ledger = new TaskLedger({ receipts: emitter, onWarning: () => {} })
    await expect(
      ledger.task({ name: "bad" }, async () => {
        throw new Error("boom")
      })({}, { taskId: "bad" }),
    ).rejects.toThrow("boom")
    const before = await ledger.get("bad")
    signerDown = true
    const err = await ledger
      .release("bad", { verified: "not_executed", by: "ops", reason: "host lost" })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TaskReleaseRefusedError)
    expect(err).toMatchObject({ code: "task_release_refused" })
    expect((err as Error).message).toMatch(
      /not released: its receipt could not be signed \(Error: KMS down\)/,
    )
    expect(((err as Error).cause as Error).message).toBe("KMS down")
    expect(await ledger.get("bad")).toEqual(before)
    const receipts: AuditReceiptRecord[] = await inner.list()
    expect(receipts.map((r) => r.status)).toEqual(["failed"])
    signerDown = false
    await expect(
      ledger.release("bad", { verified: "not_executed", by: "ops", reason: "host lost" }),
    ).resolves.toMatchObject({ lease: { resolved_by: "ops" } })
  })
})
