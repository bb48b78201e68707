import { describe, expect, it } from "vitest"
import { testTaskStore } from "../../../src/conformance.ts"
import type { JsonValue } from "../../../src/core/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  verifyReceipts,
} from "../../../src/receipts.ts"
import { deriveTaskRequestId, MemoryTaskStore, TaskLedger } from "../../../src/tasks.ts"

// Imported rather than read from disk, so the module runs unchanged where there is no file system (workerd,
// Chromium, the edge runtime).
import vectors from "../../fixtures/python-vectors.json" with { type: "json" }

testTaskStore("memory", () => {
  const storage = new MemoryTaskStore()
  return { storage }
})

describe("task request ids match the Python original", () => {
  it.each(vectors.task_request_ids)("$request_id", (v) => {
    expect(
      deriveTaskRequestId({
        task: v.task,
        kwargs: v.kwargs as unknown as Record<string, JsonValue>,
        idFrom: v.id_from,
      }),
    ).toBe(v.request_id)
  })

  it("an integer beyond 2^53 is hashed as Python's int (the original's _hash_args, run on 2026-12-03)", () => {
    // TaskLedger._hash_args((), {"n": 2**60, "day": "2026-12-01"}) in the original: d273be58cde10cc9.
    expect(deriveTaskRequestId({ task: "t", kwargs: { n: 2 ** 60, day: "2026-12-01" } })).toBe(
      "t:d273be58cde10cc9",
    )
    expect(deriveTaskRequestId({ task: "t", kwargs: { n: 2 ** 60 }, idFrom: ["n"] })).toBe(
      "t:n=1152921504606846976",
    )
  })

  it("the arguments' hash sorts keys by code point: astral after U+E000, a lone surrogate before it", () => {
    // TaskLedger().derive_request_id("nightly_report", (), json.loads(text)) in the original, run on 2026-12-04.
    expect(deriveTaskRequestId({ task: "nightly_report", kwargs: { "\ue000": 1, "\u{1F600}": 2 } })).toBe(
      "nightly_report:06ce458658d39574",
    )
    const lone = { "\ufeff": 1, "\ud800": 2, a: [1.5, null] }
    expect(deriveTaskRequestId({ task: "nightly_report", kwargs: lone })).toBe(
      "nightly_report:dc950e252ca24482",
    )
  })

  it("an id_from value that is a list or a dict is written as Python's str() writes it (repr, not JSON)", () => {
    // f"{field}={kwargs[field]}" in the original, run on 2026-12-03.
    const kwargs = { region: { a: [1, "x", true, null, 2.5], "it's": "café ☕", n: -0 }, day: ["d", 7] }
    expect(deriveTaskRequestId({ task: "t", kwargs, idFrom: ["region", "day"] })).toBe(
      `t:region={'a': [1, 'x', True, None, 2.5], "it's": 'café ☕', 'n': -0.0}:day=['d', 7]`,
    )
  })

  it("a run_id that is a bool, a dict or a list is written as Python's str() writes it", () => {
    // f"{task}:{run_id}" in the original. As JS text ("[object Object]") two different dicts would share one id.
    const id = (run_id: JsonValue) => deriveTaskRequestId({ task: "t", kwargs: { run_id } })
    expect(id(true)).toBe("t:True")
    expect(id({ batch: 1 })).toBe("t:{'batch': 1}")
    expect(id(["b", 2])).toBe("t:['b', 2]")
  })

  it("the wrapper derives the same ids and strips task_id / run_id before the body", async () => {
    const ledger = new TaskLedger()
    const seen: unknown[] = []
    const report = ledger.task(
      { name: "nightly_report", idFrom: ["region", "day"] },
      async (args: Record<string, unknown>) => {
        seen.push(args)
        return 1
      },
    )
    await report({ task_id: "T-42", day: "2026-12-01" })
    await report({ day: "2026-12-01" }, { runId: "r-7" })
    await report({ day: "2026-12-01", region: "eu" })
    const plain = ledger.task("nightly_report", async () => 2)
    await plain({ day: "2026-12-01", region: "eu", n: 1.5 })
    expect((await ledger.list()).map((t) => t.row.request_id)).toEqual(
      (vectors.task_request_ids as Array<{ request_id: string }>).map((v) => v.request_id),
    )
    expect(seen).toEqual([{ day: "2026-12-01" }, { day: "2026-12-01" }, { day: "2026-12-01", region: "eu" }])
    // The original's claim stores the clean kwargs: the rows hold what the body got, never task_id / run_id.
    expect((await ledger.list()).map((t) => t.row.kwargs)).toEqual([
      { day: "2026-12-01" },
      { day: "2026-12-01" },
      { day: "2026-12-01", region: "eu" },
      { day: "2026-12-01", region: "eu", n: 1.5 },
    ])
  })
})

describe("task receipts", () => {
  it("completed, failed and released tasks emit chained receipts; the receipt id sits beside the row", async () => {
    const store = new MemoryReceiptStore()
    const receipts = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "worker" })
    const ledger = new TaskLedger({ receipts, onWarning: () => {} })
    const ok = ledger.task("ok", async () => ({ rows: 3 }))
    const bad = ledger.task("bad", async () => {
      throw new RangeError("no data")
    })
    await ok({}, { taskId: "t1" })
    await expect(bad({}, { taskId: "t2" })).rejects.toThrow()
    await ledger.release("t2", { verified: "completed", result: 7, by: "ops", reason: "ran by hand" })
    const list = await store.list()
    expect(list.map((r) => [r.action_kind, r.request_id, r.status, r.error])).toEqual([
      ["task", "t1", "completed", null],
      ["task", "t2", "failed", "RangeError: no data"],
      // A release keeps the failure that made the task need one, whatever the verdict, as the action ledger's does.
      ["task", "t2", "completed", "RangeError: no data"],
    ])
    expect(list[2]?.outputs).toMatchObject({ operator_release: true, verified: "completed", result: 7 })
    // inputs are the row's clean kwargs, as the original's emit_from_task_entry signs them (no task_id)
    expect(list.map((r) => r.inputs)).toEqual(Array(3).fill({ args: [], kwargs: {} }))
    // the original's receipt id: "rcpt-" + 16 hex of a uuid4
    for (const r of list) expect(r.receipt_id).toMatch(/^rcpt-[0-9a-f]{16}$/)
    expect((await ledger.get("t1"))?.lease?.receipt_ref).toBe(list[0]?.receipt_id)
    expect((await ledger.get("t2"))?.lease?.receipt_ref).toBe(list[2]?.receipt_id)
    expect(await verifyReceipts(list, { hmac: "k" }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 3,
    })
  })
})
