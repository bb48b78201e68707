import { describe, expect, it } from "vitest"
import { type LedgerEntryInit, newEntry } from "../../../src/adapter-kit.ts"
import {
  type LedgerEntry,
  type SideEffectClass,
  ToolTransitionBinding,
  type ToolTransitionBindingInit,
  type TransitionGate,
} from "../../../src/core/index.ts"
import { resolveReadOnlyGate, resolveSideEffectGate } from "../../../src/core/ledger/machine/gates.ts"

const NOW = 1_800_000_000
const row = (fields: Partial<LedgerEntry>): LedgerEntry =>
  newEntry({ requestId: "r", tool: "t", ...fields } as LedgerEntryInit, NOW - 10)

const STATES: Record<string, Partial<LedgerEntry>> = {
  "needs repair": { status: "completed", terminalOutcome: "IN_FLIGHT" },
  COMPLETED: { terminalOutcome: "COMPLETED", status: "completed" },
  "IN_FLIGHT held": { terminalOutcome: "IN_FLIGHT", leaseUntil: NOW + 5 },
  "IN_FLIGHT unbounded": { terminalOutcome: "IN_FLIGHT", leaseUntil: null },
  "EXPIRED not_crossed": { terminalOutcome: "IN_FLIGHT", leaseUntil: NOW - 1 },
  "EXPIRED maybe_crossed": {
    terminalOutcome: "IN_FLIGHT",
    leaseUntil: NOW - 1,
    sideEffectBoundary: "maybe_crossed",
  },
  "EXPIRED crossed": { terminalOutcome: "IN_FLIGHT", leaseUntil: NOW, sideEffectBoundary: "crossed" },
  "FAILED_BEFORE_EFFECT not_crossed": { terminalOutcome: "FAILED_BEFORE_EFFECT", status: "failed" },
  "FAILED_BEFORE_EFFECT maybe_crossed": {
    terminalOutcome: "FAILED_BEFORE_EFFECT",
    status: "failed",
    sideEffectBoundary: "maybe_crossed",
  },
  FAILED_AFTER_EFFECT: {
    terminalOutcome: "FAILED_AFTER_EFFECT",
    status: "failed",
    sideEffectBoundary: "crossed",
  },
  UNKNOWN: { terminalOutcome: "UNKNOWN", status: "failed", sideEffectBoundary: "maybe_crossed" },
  BLOCKED: { terminalOutcome: "BLOCKED", status: "failed" },
}

// Reference §1.6, "state × class" with class defaults (no provider-key param, no reconciler). The ledger-level
// consequences of each cell (run, return, poll, block) are asserted in gate-table.test.ts.
const TABLE: Record<string, Record<SideEffectClass, TransitionGate>> = {
  "needs repair": {
    read: "REPAIR",
    idempotent_mutate: "REPAIR",
    keyed_mutate: "REPAIR",
    non_idempotent_mutate: "REPAIR",
    irreversible: "REPAIR",
  },
  COMPLETED: {
    read: "RETURN",
    idempotent_mutate: "RETURN",
    keyed_mutate: "RETURN",
    non_idempotent_mutate: "RETURN",
    irreversible: "RETURN",
  },
  "IN_FLIGHT held": {
    read: "POLL",
    idempotent_mutate: "POLL",
    keyed_mutate: "POLL",
    non_idempotent_mutate: "POLL",
    irreversible: "POLL",
  },
  "IN_FLIGHT unbounded": {
    read: "POLL",
    idempotent_mutate: "POLL",
    keyed_mutate: "POLL",
    non_idempotent_mutate: "POLL",
    irreversible: "POLL",
  },
  "EXPIRED not_crossed": {
    read: "RECLAIM",
    idempotent_mutate: "ALLOW",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  "EXPIRED maybe_crossed": {
    read: "RECLAIM",
    idempotent_mutate: "HARD_BLOCK",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  "EXPIRED crossed": {
    read: "RECLAIM",
    idempotent_mutate: "HARD_BLOCK",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  "FAILED_BEFORE_EFFECT not_crossed": {
    read: "RECLAIM",
    idempotent_mutate: "ALLOW",
    keyed_mutate: "ALLOW",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  "FAILED_BEFORE_EFFECT maybe_crossed": {
    read: "RECLAIM",
    idempotent_mutate: "HARD_BLOCK",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  FAILED_AFTER_EFFECT: {
    read: "RECLAIM",
    idempotent_mutate: "HARD_BLOCK",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  UNKNOWN: {
    read: "SOFT_BLOCK",
    idempotent_mutate: "HARD_BLOCK",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
  BLOCKED: {
    read: "SOFT_BLOCK",
    idempotent_mutate: "HARD_BLOCK",
    keyed_mutate: "HARD_BLOCK",
    non_idempotent_mutate: "HARD_BLOCK",
    irreversible: "HARD_BLOCK",
  },
}

const bind = (cls: SideEffectClass, extra: Partial<ToolTransitionBindingInit> = {}) =>
  ToolTransitionBinding.forTool({ agentId: "a", policyVersion: "p", sideEffectClass: cls, ...extra })

const gate = (cls: SideEffectClass, e: LedgerEntry, key: string | null = null): TransitionGate =>
  cls === "read" ? resolveReadOnlyGate(e, NOW) : resolveSideEffectGate(e, bind(cls), key, NOW)

describe("gate table (class defaults)", () => {
  for (const [state, cells] of Object.entries(TABLE)) {
    for (const [cls, want] of Object.entries(cells) as Array<[SideEffectClass, TransitionGate]>) {
      it(`${state} × ${cls} → ${want}`, () => {
        expect(gate(cls, row(STATES[state] as Partial<LedgerEntry>))).toBe(want)
      })
    }
  }
})

describe("side-effect gate overrides", () => {
  const keyed = { providerIdempotencyKeyParam: "idem", providerIdempotencyKeyTtl: 60 }

  it("UNKNOWN allows only with key param + TTL + same key + valid window", () => {
    const e = row({ ...STATES.UNKNOWN, providerIdempotencyKey: "k1", providerKeyFirstAttemptAt: NOW - 30 })
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k1", NOW)).toBe("ALLOW")
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k2", NOW)).toBe("HARD_BLOCK")
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), null, NOW)).toBe("HARD_BLOCK")
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k1", NOW + 30)).toBe("HARD_BLOCK")
    expect(
      resolveSideEffectGate(e, bind("keyed_mutate", { providerIdempotencyKeyParam: "idem" }), "k1", NOW),
    ).toBe("HARD_BLOCK")
    expect(
      resolveSideEffectGate(
        e,
        bind("non_idempotent_mutate", {
          ...keyed,
          retryPermission: "retry_only_with_same_provider_idempotency_key",
        }),
        "k1",
        NOW,
      ),
    ).toBe("HARD_BLOCK")
  })

  it("key window: 59.999 s of 60 is valid, exactly 60 s is expired", () => {
    const e = row({
      ...STATES.UNKNOWN,
      providerIdempotencyKey: "k1",
      providerKeyFirstAttemptAt: NOW - 59.999,
    })
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k1", NOW)).toBe("ALLOW")
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k1", NOW + 0.001)).toBe("HARD_BLOCK")
  })

  it("FAILED_BEFORE_EFFECT keyed with key param needs the same, unexpired key", () => {
    const e = row({
      ...STATES["FAILED_BEFORE_EFFECT not_crossed"],
      providerIdempotencyKey: "k1",
      providerKeyFirstAttemptAt: NOW - 10,
    })
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k1", NOW)).toBe("ALLOW")
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k2", NOW)).toBe("HARD_BLOCK")
    expect(resolveSideEffectGate(e, bind("keyed_mutate", keyed), "k1", NOW + 50)).toBe("HARD_BLOCK")
  })

  it("retry_permission and spendability overrides open the mutating columns; crossed always blocks", () => {
    const failed = row(STATES["FAILED_BEFORE_EFFECT not_crossed"] as Partial<LedgerEntry>)
    expect(
      resolveSideEffectGate(
        failed,
        bind("non_idempotent_mutate", { retryPermission: "safe_retry" }),
        null,
        NOW,
      ),
    ).toBe("ALLOW")
    expect(
      resolveSideEffectGate(
        failed,
        bind("idempotent_mutate", { retryPermission: "never_retry_automatically" }),
        null,
        NOW,
      ),
    ).toBe("HARD_BLOCK")
    const expired = row(STATES["EXPIRED not_crossed"] as Partial<LedgerEntry>)
    expect(
      resolveSideEffectGate(
        expired,
        bind("non_idempotent_mutate", { spendability: "multi_use", retryPermission: "safe_retry" }),
        null,
        NOW,
      ),
    ).toBe("ALLOW")
    expect(
      resolveSideEffectGate(expired, bind("non_idempotent_mutate", { spendability: "multi_use" }), null, NOW),
    ).toBe("HARD_BLOCK")
    expect(
      resolveSideEffectGate(
        row(STATES["EXPIRED crossed"] as Partial<LedgerEntry>),
        bind("idempotent_mutate"),
        null,
        NOW,
      ),
    ).toBe("HARD_BLOCK")
  })
})

describe("bindings", () => {
  it("fill class defaults and parse legacy aliases", () => {
    const b = bind("payment" as SideEffectClass)
    expect(b).toMatchObject({
      sideEffectClass: "non_idempotent_mutate",
      retryPermission: "manual_reconciliation_required",
      spendability: "single_use",
      capability: "blind",
    })
    expect(bind("read_only" as SideEffectClass).spendability).toBe("multi_use")
    expect(bind("onchain_action" as SideEffectClass).retryPermission).toBe("never_retry_automatically")
    expect(() => bind("teleport" as SideEffectClass)).toThrow(
      /side_effect_class must be one of .*, got 'teleport'/,
    )
  })

  it("capability honesty: tightening is fine, loosening throws", () => {
    expect(bind("read", { capability: "blind" }).capability).toBe("blind")
    expect(bind("non_idempotent_mutate", { capability: "queryable" }).capability).toBe("blind")
    expect(() => bind("irreversible", { capability: "queryable" })).toThrow(/looser than the floor 'blind'/)
    expect(() => bind("keyed_mutate", { capability: "idempotent" })).toThrow(/duplicate effects/)
  })

  it("scopeFrom takes the scope fields only, and keeps the arguments that name them", () => {
    const scopeFrom = { thread_id: "conversation", run_id: "", node: "step" }
    expect(bind("read", { scopeFrom }).scopeFrom).toEqual({ thread_id: "conversation", node: "step" })
    const typo = { thread: "conversation" } as ToolTransitionBindingInit["scopeFrom"]
    expect(() => bind("read", { scopeFrom: typo })).toThrow(
      expect.objectContaining({
        code: "invalid_option",
        message: "a scopeFrom key must be one of thread_id, run_id, node, got 'thread'",
      }),
    )
  })
})
