// Every cell of the reference's combined "state × class" table, observed through ledger.tool(): does the body run,
// does the caller get the stored result, does it wait, or is it refused?

import { describe, expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  argsFingerprint,
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerPollTimeoutError,
  MemoryLedgerStorage,
  type SideEffectClass,
  ToolTransitionBinding,
  transitionKey,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

type Effect = "run" | "return" | "poll" | "block"
const NOW = 1_800_000_000

const STATES: Record<string, Partial<LedgerEntry>> = {
  "needs repair (completed status)": { status: "completed", terminalOutcome: "IN_FLIGHT", result: "stored" },
  COMPLETED: { terminalOutcome: "COMPLETED", status: "completed", result: "stored" },
  "IN_FLIGHT held": { terminalOutcome: "IN_FLIGHT", leaseUntil: NOW + 3600 },
  "IN_FLIGHT unbounded": { terminalOutcome: "IN_FLIGHT", leaseUntil: null },
  "EXPIRED not_crossed": { terminalOutcome: "IN_FLIGHT", leaseUntil: NOW - 1 },
  "EXPIRED maybe_crossed": {
    terminalOutcome: "IN_FLIGHT",
    leaseUntil: NOW - 1,
    sideEffectBoundary: "maybe_crossed",
  },
  "FAILED_BEFORE_EFFECT not_crossed": { terminalOutcome: "FAILED_BEFORE_EFFECT", status: "failed" },
  FAILED_AFTER_EFFECT: {
    terminalOutcome: "FAILED_AFTER_EFFECT",
    status: "failed",
    sideEffectBoundary: "crossed",
  },
  UNKNOWN: { terminalOutcome: "UNKNOWN", status: "failed", sideEffectBoundary: "maybe_crossed" },
  BLOCKED: { terminalOutcome: "BLOCKED", status: "failed" },
}

const TABLE: Record<string, [Effect, Effect, Effect, Effect, Effect]> = {
  //                                   read      idem_mut  keyed     non_idem  irreversible
  "needs repair (completed status)": ["return", "return", "return", "return", "return"],
  COMPLETED: ["return", "return", "return", "return", "return"],
  "IN_FLIGHT held": ["poll", "poll", "poll", "poll", "poll"],
  "IN_FLIGHT unbounded": ["poll", "poll", "poll", "poll", "poll"],
  "EXPIRED not_crossed": ["run", "run", "block", "block", "block"],
  "EXPIRED maybe_crossed": ["run", "block", "block", "block", "block"],
  "FAILED_BEFORE_EFFECT not_crossed": ["run", "run", "run", "block", "block"],
  FAILED_AFTER_EFFECT: ["run", "block", "block", "block", "block"],
  UNKNOWN: ["run", "block", "block", "block", "block"],
  BLOCKED: ["run", "block", "block", "block", "block"],
}
const CLASSES: SideEffectClass[] = [
  "read",
  "idempotent_mutate",
  "keyed_mutate",
  "non_idempotent_mutate",
  "irreversible",
]

async function observe(
  state: Partial<LedgerEntry>,
  cls: SideEffectClass,
): Promise<{ effect: Effect; row: LedgerEntry | null; before: LedgerEntry }> {
  const storage = new MemoryLedgerStorage()
  const clock = new ManualClock(NOW)
  const ledger = new ActionLedger({ storage, clock, pollTimeout: 1, pollInterval: 0.1, onWarning: () => {} })
  const requestId = `req-${cls}`
  const binding = { agentId: "a", policyVersion: "p", sideEffectClass: cls }
  // The row as a call of this class made it: the table is the original's state × class of one tool.
  const effectId = transitionKey({
    tool: "t",
    binding: ToolTransitionBinding.from(binding),
    argsFingerprint: argsFingerprint({ x: 1 }),
    dispatchId: requestId,
  })
  const before = newEntry(
    {
      requestId,
      tool: "t",
      kwargs: { x: 1, request_id: requestId },
      owner: "other",
      fence: 3,
      effectProtocolRequired: true,
      effectId,
      ...state,
    },
    NOW - 100,
  )
  await storage.set(before)
  let ran = 0
  const tool = ledger.tool({ name: "t", binding }, async () => {
    ran++
    return "ran"
  })
  try {
    const out = await tool({ x: 1 }, { requestId })
    if (out === "ran") {
      expect(ran).toBe(1)
      return { effect: "run", row: await storage.get(requestId), before }
    }
    expect(out).toBe("stored")
    expect(ran).toBe(0)
    return { effect: "return", row: await storage.get(requestId), before }
  } catch (e) {
    expect(ran).toBe(0)
    if (e instanceof LedgerPollTimeoutError)
      return { effect: "poll", row: await storage.get(requestId), before }
    if (e instanceof LedgerHardBlockError)
      return { effect: "block", row: await storage.get(requestId), before }
    throw e
  }
}

describe("combined gate table through ledger.tool()", () => {
  for (const [state, effects] of Object.entries(TABLE)) {
    CLASSES.forEach((cls, i) => {
      const want = effects[i] as Effect
      it(`${state} × ${cls} → ${want}`, async () => {
        const { effect, row, before } = await observe(STATES[state] as Partial<LedgerEntry>, cls)
        expect(effect).toBe(want)
        if (want === "run")
          expect(row).toMatchObject({ terminalOutcome: "COMPLETED", result: "ran", fence: 4 })
        if (want === "poll") expect(row).toEqual(before)
        if (want === "block") {
          // The first hard block of a lapsed lease durably converts it to BLOCKED; every other row is left as is.
          if (state.startsWith("EXPIRED")) expect(row).toMatchObject({ terminalOutcome: "BLOCKED", fence: 3 })
          else expect(row).toEqual(before)
        }
      })
    })
  }
})
