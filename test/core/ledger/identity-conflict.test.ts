// A row under the same tool-call id whose key this call does not derive is never a licence to run. The Python
// original writes `10.0` where JavaScript can only see `10`, so its key for the same call differs from ours.

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import {
  ActionLedger,
  type ActionLedgerOptions,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  type LedgerStorage,
  MemoryLedgerStorage,
  type TerminalOutcome,
} from "../../../src/core/index.ts"

const binding = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate",
} as const
// What a Python worker derived for {"amount": 10.0, ...}: not reproducible from the parsed number 10.
const PY_KEY = "d".repeat(64)

function pythonRow(outcome: TerminalOutcome, now: number) {
  return newEntry(
    {
      requestId: PY_KEY,
      tool: "send_payment",
      kwargs: { amount: 10, recipient: "acct_1", tool_call_id: "call_py" },
      terminalOutcome: outcome,
      status: outcome === "COMPLETED" ? "completed" : outcome === "IN_FLIGHT" ? "in-flight" : "failed",
      fence: 1,
      owner: "python-host:1",
      leaseUntil: outcome === "IN_FLIGHT" ? now + 3600 : null,
      sideEffectBoundary: outcome === "COMPLETED" ? "crossed" : "not_crossed",
      result: outcome === "COMPLETED" ? { id: "pi_py" } : null,
    },
    now,
  )
}

function setup(storage: LedgerStorage, options: ActionLedgerOptions = {}) {
  const ledger = new ActionLedger({ storage, onWarning: () => {}, ...options })
  let runs = 0
  const pay = ledger.tool(
    { name: "send_payment", binding },
    async (a: { amount: number; recipient: string }) => {
      runs++
      return { id: `pi_ts_${a.amount}` }
    },
  )
  return { ledger, pay, runs: () => runs }
}

const dirs: string[] = []
function tmpDir(): string {
  dirs.push(mkdtempSync(join(tmpdir(), "idc-")))
  return dirs[dirs.length - 1] as string
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const stores: Array<[string, () => LedgerStorage]> = [
  ["memory", () => new MemoryLedgerStorage()],
  ["file", () => new FileLedgerStorage(join(tmpDir(), "ledger.json"))],
]

describe.each(stores)("identity conflicts fail closed (%s)", (_name, make) => {
  for (const outcome of ["COMPLETED", "IN_FLIGHT", "FAILED_BEFORE_EFFECT"] as const) {
    it(`a Python ${outcome} row under the same tool-call id never leads to a TypeScript execution`, async () => {
      const storage = make()
      await storage.set(pythonRow(outcome, Date.now() / 1000))
      const { pay, runs } = setup(storage)
      for (let i = 0; i < 4; i++) {
        const err = await pay({ amount: 10, recipient: "acct_1" }, { toolCallId: "call_py" }).catch((e) => e)
        expect(err).toBeInstanceOf(LedgerIdentityConflictError)
        expect((err as LedgerIdentityConflictError).priorRequestId).toBe(PY_KEY)
        expect((err as Error).message).toContain(PY_KEY)
        expect((err as Error).message).toContain((err as LedgerIdentityConflictError).requestId as string)
      }
      expect(runs()).toBe(0)
    })
  }

  it("racing re-sends of the same call: still no execution", async () => {
    const storage = make()
    await storage.set(pythonRow("COMPLETED", Date.now() / 1000))
    const { pay, runs } = setup(storage)
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => pay({ amount: 10, recipient: "acct_1" }, { toolCallId: "call_py" })),
    )
    expect(runs()).toBe(0)
    expect(results.every((r) => r.status === "rejected")).toBe(true)
  })

  it("even with the drift check off, equal arguments under another key refuse", async () => {
    const storage = make()
    await storage.set(pythonRow("COMPLETED", Date.now() / 1000))
    const { pay, runs } = setup(storage, { onArgsDrift: "off" })
    await expect(pay({ amount: 10, recipient: "acct_1" }, { toolCallId: "call_py" })).rejects.toBeInstanceOf(
      LedgerIdentityConflictError,
    )
    expect(runs()).toBe(0)
  })

  it("stored arguments that really differ still follow the drift policy", async () => {
    const storage = make()
    await storage.set(pythonRow("COMPLETED", Date.now() / 1000))
    const hard = setup(storage, { onArgsDrift: "hard" })
    await expect(
      hard.pay({ amount: 11, recipient: "acct_1" }, { toolCallId: "call_py" }),
    ).rejects.toBeInstanceOf(LedgerHardBlockError)
    const off = setup(storage, { onArgsDrift: "off" })
    await expect(off.pay({ amount: 12, recipient: "acct_1" }, { toolCallId: "call_py" })).resolves.toEqual({
      id: "pi_ts_12",
    })
    expect(hard.runs() + off.runs()).toBe(1)
  })

  it("the key this call derives is the TypeScript one, so the conflict names both", async () => {
    const storage = make()
    await storage.set(pythonRow("COMPLETED", Date.now() / 1000))
    const { pay } = setup(storage)
    const err = (await pay({ amount: 10, recipient: "acct_1" }, { toolCallId: "call_py" }).catch(
      (e) => e,
    )) as LedgerIdentityConflictError
    expect(err.requestId).not.toBe(PY_KEY)
    expect(err.requestId).toMatch(/^[0-9a-f]{64}$/)
  })
})

describe("a Python row of a scopeFrom tool under an explicit request id", () => {
  // The original stores thread_id / run_id / node only when they were passed; a scopeFrom tool's scope lives in the
  // named arguments, and its identity check reads it from there (_scope_from_stored_kwargs).
  const scoped = { ...binding, scopeFrom: { thread_id: "conversation" } } as const
  async function replay(conversation: string) {
    const storage = new MemoryLedgerStorage()
    await storage.set(
      newEntry(
        {
          requestId: "pay:order-1",
          tool: "send_payment",
          kwargs: { amount: 10, conversation: "c1", request_id: "pay:order-1" },
          terminalOutcome: "COMPLETED",
          status: "completed",
          fence: 1,
          owner: "python-host:1",
          sideEffectBoundary: "crossed",
          result: { id: "pi_py" },
        },
        1_800_000_000,
      ),
    )
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const pay = ledger.tool({ name: "send_payment", binding: scoped }, async () => {
      runs++
      return { id: "pi_ts" }
    })
    const out = await pay({ amount: 10, conversation }, { requestId: "pay:order-1" }).catch((e: unknown) => e)
    return { out, runs }
  }

  it("the same call in the same scope replays the stored result; the body does not run", async () => {
    expect(await replay("c1")).toEqual({ out: { id: "pi_py" }, runs: 0 })
  })

  it("another scope is still an identity conflict", async () => {
    const { out, runs } = await replay("c2")
    expect(out).toBeInstanceOf(LedgerIdentityConflictError)
    expect(runs).toBe(0)
  })
})
