// A strict consumer's view of tool arguments, side-effect classes and option objects. tsc checks this file (it is in
// the project): each @ts-expect-error fails the typecheck when its line compiles. The refused calls also run, so the
// types are seen to refuse exactly what the runtime refuses.
import { describe, expect, expectTypeOf, it } from "vitest"
import type { MemoryLedgerStorageOptions as AdapterMemoryStorageOptions } from "../../src/adapters/memory.ts"
import { MemoryLedgerStorage as AdapterMemoryStorage } from "../../src/adapters/memory.ts"
import { type InstrumentableBodies, loadConfigFromString } from "../../src/config.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import type { AiSdkGenerateResult, AiSdkUsageV2, AiSdkUsageV3 } from "../../src/harness/index.ts"
import type { DevWorkspace, WorkspaceActOptions } from "../../src/harness/workspace/index.ts"
import {
  ActionLedger,
  LedgerIdentityConflictError,
  type LedgerIdentityConflictErrorInit,
  type LegacySideEffectAlias,
  type MemoryLedgerStorage,
  type MemoryLedgerStorageOptions,
  type RenewLeaseGuard,
  type SideEffectClass,
  type ToolArgs,
  ToolTransitionBinding,
  type ToolTransitionBindingInit,
} from "../../src/index.ts"
import { TaskLedger } from "../../src/tasks.ts"
import {
  ToolBoundaryError,
  ToolBoundaryExhaustedError,
  type ToolBoundaryExhaustedErrorInit,
} from "../../src/tools.ts"
import {
  HistoryDropError,
  type HistoryDropErrorInit,
  type HistoryDuplicateTurnsError,
  type HistoryDuplicateTurnsErrorInit,
  type HistoryTruncatedError,
  type HistoryTruncatedErrorInit,
  type MessageValidationError,
  type MessageValidationErrorInit,
} from "../../src/transcript.ts"

const quiet = { onWarning: () => {} }
const refused = { code: "invalid_option" }
const yaml = `transition:
  agent_id: a
  policy_version: v1
action_ledger:
  storage: memory
tools:
  charge:
    ledger: true
    side_effect_class: keyed_mutate
`

interface PaymentArgs {
  amount: number
  recipient: string
}

describe("tool arguments: a plain object, as the runtime requires", () => {
  it("ToolArgs keeps an object or an interface and refuses a list, a Map, a Set or a function", () => {
    expectTypeOf<ToolArgs<PaymentArgs>>().toEqualTypeOf<PaymentArgs>()
    expectTypeOf<ToolArgs<Record<string, unknown>>>().toEqualTypeOf<Record<string, unknown>>()
    expectTypeOf<ToolArgs<number[]>>().not.toEqualTypeOf<number[]>()
    expectTypeOf<ToolArgs<Map<string, number>>>().not.toEqualTypeOf<Map<string, number>>()
    expectTypeOf<ToolArgs<Set<number>>>().not.toEqualTypeOf<Set<number>>()
    expectTypeOf<ToolArgs<() => void>>().not.toEqualTypeOf<() => void>()
  })

  it("ledger.tool, RemoteLedger.tool and TaskLedger.task refuse a list or a Map at compile time and at run time", async () => {
    const ledger = new ActionLedger(quiet)
    // @ts-expect-error a list is not a plain object of JSON values
    const sum = ledger.tool({ name: "sum" }, async (args: number[]) => args.length)
    await expect(sum([1, 2])).rejects.toMatchObject(refused)
    // @ts-expect-error a Map has no JSON form that says what it holds
    const sized = ledger.tool({ name: "m" }, async (args: Map<string, number>) => args.size)
    await expect(sized(new Map([["amount", 1]]))).rejects.toMatchObject(refused)
    let fetched = 0
    const fetch = async () => {
      fetched++
      return new Response(null)
    }
    const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch, ...quiet })
    // @ts-expect-error a list, through the edge client
    const rsum = remote.tool({ name: "sum" }, async (args: string[]) => args.length)
    await expect(rsum(["a"], { toolCallId: "c1" })).rejects.toMatchObject(refused)
    expect(fetched).toBe(0)
    // @ts-expect-error a list, as a task's arguments
    const task = new TaskLedger(quiet).task("t", async (args: number[]) => args.length)
    await expect(task([1])).rejects.toMatchObject(refused)
  })

  it("config.apply and config.instrument refuse a number or a list, which a ledgered tool refuses", async () => {
    const config = loadConfigFromString(yaml, { env: {}, ...quiet })
    // @ts-expect-error a number names no arguments
    const byNumber = config.apply("charge", async (amount: number) => amount)
    await expect(byNumber(5000 as never, { toolCallId: "c1" })).rejects.toMatchObject(refused)
    // @ts-expect-error a list, through instrument()
    const tools = config.instrument({ charge: async (amounts: number[]) => amounts.length })
    await expect(tools.charge([1, 2] as never, { toolCallId: "c2" })).rejects.toMatchObject(refused)
    const pay = config.apply("charge", async (a: PaymentArgs) => a.amount)
    // `tx` still takes its type from the context (the README's example).
    const set = config.instrument({ charge: async (a: PaymentArgs, tx) => tx.sideEffect(() => a.recipient) })
    expectTypeOf(set.charge).parameter(0).toEqualTypeOf<PaymentArgs>()
    expectTypeOf<InstrumentableBodies<{ f: (a: PaymentArgs) => number }>>().toEqualTypeOf<{
      f: (args: PaymentArgs, ctx: unknown) => number
    }>()
    expect(await pay({ amount: 3, recipient: "r" }, { toolCallId: "c3" })).toBe(3)
    expect(await set.charge({ amount: 3, recipient: "r" }, { toolCallId: "c4" })).toBe("r")
  })
})

describe("side-effect classes", () => {
  it("a binding takes a canonical class or a legacy alias, and a misspelt class does not compile", () => {
    expectTypeOf<ToolTransitionBindingInit["sideEffectClass"]>().toEqualTypeOf<
      SideEffectClass | LegacySideEffectAlias
    >()
    const typo: ToolTransitionBindingInit = {
      agentId: "a",
      policyVersion: "1",
      // @ts-expect-error not a class the runtime parses
      sideEffectClass: "keyed_mutat",
    }
    expect(() => ToolTransitionBinding.forTool(typo)).toThrow(expect.objectContaining(refused))
    const alias: LegacySideEffectAlias = "payment"
    const binding = ToolTransitionBinding.forTool({
      agentId: "a",
      policyVersion: "1",
      sideEffectClass: alias,
    })
    expect(binding.sideEffectClass).toBe("non_idempotent_mutate")
  })
})

describe("option objects have exported names", () => {
  it("each constructor or method takes its named option type", () => {
    expectTypeOf<ConstructorParameters<typeof MemoryLedgerStorage>[0]>().toEqualTypeOf<
      MemoryLedgerStorageOptions | undefined
    >()
    expectTypeOf<AdapterMemoryStorageOptions>().toEqualTypeOf<MemoryLedgerStorageOptions>()
    expectTypeOf<Parameters<ActionLedger["renewLease"]>[1]>().toEqualTypeOf<RenewLeaseGuard>()
    expectTypeOf<Parameters<DevWorkspace["act"]>[1]>().toEqualTypeOf<WorkspaceActOptions | undefined>()
    expectTypeOf<AiSdkGenerateResult["usage"]>().toEqualTypeOf<AiSdkUsageV2 | AiSdkUsageV3>()
    expectTypeOf<ConstructorParameters<typeof LedgerIdentityConflictError>[2]>().toEqualTypeOf<
      LedgerIdentityConflictErrorInit | undefined
    >()
    expectTypeOf<
      ConstructorParameters<typeof ToolBoundaryExhaustedError>[1]
    >().toEqualTypeOf<ToolBoundaryExhaustedErrorInit>()
    expectTypeOf<
      ConstructorParameters<typeof MessageValidationError>[1]
    >().toEqualTypeOf<MessageValidationErrorInit>()
    expectTypeOf<
      ConstructorParameters<typeof HistoryTruncatedError>[1]
    >().toEqualTypeOf<HistoryTruncatedErrorInit>()
    expectTypeOf<
      ConstructorParameters<typeof HistoryDuplicateTurnsError>[1]
    >().toEqualTypeOf<HistoryDuplicateTurnsErrorInit>()
    expectTypeOf<ConstructorParameters<typeof HistoryDropError>[1]>().toEqualTypeOf<HistoryDropErrorInit>()
  })

  it("the named types build the errors and stores they name", () => {
    const init: HistoryDropErrorInit = { messageCount: 3, estimatedTokens: 10, dropped: 2 }
    expect(new HistoryDropError("dropped", init)).toMatchObject({ ...init, reason: "dropped_messages" })
    const keys: LedgerIdentityConflictErrorInit = { priorRequestId: "r1" }
    expect(new LedgerIdentityConflictError("conflict", "pay", keys)).toMatchObject({ priorRequestId: "r1" })
    const lastError = new ToolBoundaryError("bad", {
      violation: "schema",
      toolName: "pay",
      stage: "input",
      llmMessage: "retry",
    })
    const exhausted: ToolBoundaryExhaustedErrorInit = { lastError }
    expect(new ToolBoundaryExhaustedError("gave up", exhausted).messages).toEqual([])
    const options: MemoryLedgerStorageOptions = { limits: { maxRowBytes: 10 } }
    expect(new AdapterMemoryStorage(options).limits).toBe(options.limits)
  })
})
