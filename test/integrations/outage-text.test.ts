// What the model reads when the ledger's store is down, or there but unusable (a corrupt file, a lock held past its
// timeout): the AI SDK and LangGraph's ToolNode send it the thrown error's message, which quotes the store driver
// (file paths, hosts, credentials in a URL), and a model told that a call failed calls again under a new id.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { AIMessage, type ToolMessage } from "@langchain/core/messages"
import { tool as lcTool } from "@langchain/core/tools"
import { ToolNode } from "@langchain/langgraph/prebuilt"
import { Agent, tool as agentsTool, Runner } from "@openai/agents"
import { generateText, type StepResult, stepCountIs, type Tool, type ToolSet, tool } from "ai"
import { afterAll, describe, expect, it } from "vitest"
import { z } from "zod"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerError,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { STORE_FAULT_CODES } from "../../src/core/storage/store-faults.ts"
import { guardTool as guardAiTool, guardTools as guardAiTools } from "../../src/integrations/ai-sdk.ts"
import { guardTool as guardLgTool, guardTools as guardLgTools } from "../../src/integrations/langgraph.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { scriptedGraph, toolMessages } from "./scripted/langgraph.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const DRIVER = "ENOTDIR: not a directory, mkdir '/srv/billing/ledger' (redis://billing:hunter2@10.0.0.7:6379)"

/** A store whose every call fails with a driver error naming a path and a host. */
function downLedger(): ActionLedger {
  const storage = new Proxy(new MemoryLedgerStorage(), {
    get: (target, prop, receiver) => {
      const value = Reflect.get(target, prop, receiver)
      return typeof value === "function"
        ? () => {
            throw new Error(DRIVER)
          }
        : value
    },
  }) as LedgerStorage
  return new ActionLedger({ storage, onWarning: () => {} })
}

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

/** The outage as the app catches it: the ledger's class and code, the driver's text kept on its cause. */
function expectOutage(error: unknown): void {
  expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
  const e = error as LedgerStorageUnavailableError
  expect(e.code).toBe("ledger_storage_unavailable")
  expect(e.message).not.toContain("/srv")
  expect((e.cause as Error).message).toContain("/srv/billing/ledger")
}

describe("a ledger outage reaches the model as fixed text, never the store driver's", () => {
  it("AI SDK: the tool error the model reads on its next step", async () => {
    const prompts: string[] = []
    const model = scriptedModel([[{ id: "call_1", tool: "pay", input: { to: "acct_1" } }]], prompts)
    const tools = guardAiTools(
      downLedger(),
      { pay: tool({ inputSchema: z.object({ to: z.string() }), execute: async () => "ch_1" }) },
      { pay: { binding } },
    )
    const result = await generateText({ model, tools, prompt: "pay", stopWhen: stepCountIs(3) })
    const seen = prompts.at(-1) ?? ""
    expect(seen).toContain("Ledger storage unavailable")
    expect(seen).not.toContain("/srv")
    expect(seen).not.toContain("hunter2")
    const failure = result.steps[0]?.content.find((p) => p.type === "tool-error")
    expectOutage(failure?.error)
  })

  it("LangGraph: ToolNode's error message, and the error it rethrows without handleToolErrors", async () => {
    const pay = lcTool(async () => "ch_1", {
      name: "pay",
      description: "pay",
      schema: z.object({ to: z.string() }),
    })
    const tools = guardLgTools(downLedger(), [pay], { pay: { binding } })
    const call = new AIMessage({
      content: "",
      tool_calls: [{ id: "call_1", name: "pay", args: { to: "acct_1" } }],
    })
    const config = { configurable: { thread_id: "t-outage" } }
    const out = (await new ToolNode(tools).invoke({ messages: [call] }, config)) as {
      messages: ToolMessage[]
    }
    const text = String(out.messages[0]?.content)
    expect(text).toContain("Ledger storage unavailable")
    expect(text).not.toContain("/srv")
    const thrown = await new ToolNode(tools, { handleToolErrors: false })
      .invoke({ messages: [call] }, config)
      .then(
        () => null,
        (e: unknown) => e,
      )
    expectOutage(thrown)
  })
  it("OpenAI Agents: the outage fails the run (its errorFunction rethrows it), so the model reads nothing", async () => {
    const pay = agentsTool(
      guardToolOptions(
        downLedger(),
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ to: z.string() }),
          execute: async () => "ch_1",
        },
        { binding },
      ),
    )
    const model = new ScriptedModel([[{ callId: "call_1", name: "pay", args: { to: "acct_1" } }]])
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const failure = await runner
      .run(new Agent({ name: "payer", model: "scripted", tools: [pay] }), "pay")
      .then(
        () => null,
        (e: unknown) => e,
      )
    expect((failure as { error?: unknown } | null)?.error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(model.requests).toHaveLength(1)
  })
})

/** The stop condition docs/integrations.md gives, verbatim. */
const ledgerOutage = <T extends ToolSet>({ steps }: { steps: StepResult<T>[] }): boolean =>
  steps
    .at(-1)
    ?.content.some(
      (p) => p.type === "tool-error" && (p.error as { code?: string }).code === "ledger_storage_unavailable",
    ) ?? false

/** The scripted model pays twice; the run stops as the docs' stop condition says. */
async function untilOutage(pay: Tool) {
  const prompts: string[] = []
  const result = await generateText({
    model: scriptedModel(twice, prompts),
    tools: { pay },
    prompt: "pay",
    stopWhen: [stepCountIs(5), ledgerOutage],
  })
  return { result, prompts }
}

/** A store fault the ledger passes on as it is (a LedgerError of its own code), naming the store's path. */
class StoreFault extends LedgerError {
  constructor(override readonly code: string) {
    super(`${code}: /srv/billing/ledger.json`)
  }
}

/** A store whose completion write (after the effect) fails with `fault`. */
function faultyAfterEffect(fault: () => Error): ActionLedger {
  const storage = new Proxy(new MemoryLedgerStorage(), {
    get: (target, prop) => {
      const value = Reflect.get(target, prop, target)
      if (typeof value !== "function") return value
      return (...args: [LedgerEntry]) => {
        if (prop === "tryTransition" && args[0].terminalOutcome === "COMPLETED") throw fault()
        return value.apply(target, args)
      }
    },
  })
  return new ActionLedger({ storage, onWarning: () => {} })
}

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A file ledger whose completion write meets a lock another live process holds past `lockTimeout`. */
function lockedAtCompletion() {
  const dir = mkdtempSync(join(tmpdir(), "outage-text-"))
  dirs.push(dir)
  const storage = new FileLedgerStorage(join(dir, "ledger.json"), { lockTimeout: 0.2, fsync: false })
  const lock = `${storage.path}.lock.ts`
  const charged: number[] = []
  return {
    dir,
    charged,
    ledger: new ActionLedger({ storage, pollInterval: 0.005, onWarning: () => {} }),
    /** The tool's body: charges, then a slow writer takes the lock until the model's next turn. */
    pay: async ({ cents }: { cents: number }) => {
      charged.push(cents)
      const at = Date.now()
      writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), pidns: "x", token: "x", at }))
      return `paid ${cents}`
    },
    unlock: () => rmSync(lock, { force: true }),
  }
}

const cents = z.object({ cents: z.number() })
const twice = [
  [{ id: "call_a", tool: "pay", input: { cents: 10 } }],
  [{ id: "call_b", tool: "pay", input: { cents: 10 } }],
]

describe("a store that cannot be used (not only one that is down) is an outage", () => {
  it.each([...STORE_FAULT_CODES])(
    "AI SDK, %s after the effect: fixed text, the docs' stop condition ends the run, charged once",
    async (code) => {
      const charged: number[] = []
      const pay = guardAiTool(
        faultyAfterEffect(() => new StoreFault(code)),
        tool({ inputSchema: cents, execute: async (a) => charged.push(a.cents) }),
        { name: "pay", binding },
      )
      const { result, prompts } = await untilOutage(pay)
      expect(charged).toEqual([10])
      expect(prompts).toHaveLength(1)
      const failure = result.steps[0]?.content.find((p) => p.type === "tool-error")?.error as Error
      expect(failure).toBeInstanceOf(LedgerStorageUnavailableError)
      expect(failure.message).not.toContain("/srv")
      expect((failure.cause as StoreFault).code).toBe(code)
    },
  )

  it("AI SDK, a file lock held past its timeout: the model never reads the lock's path, the retry never runs", async () => {
    const f = lockedAtCompletion()
    const pay = guardAiTool(f.ledger, tool({ inputSchema: cents, execute: f.pay }), { name: "pay", binding })
    const { result, prompts } = await untilOutage(pay)
    f.unlock()
    expect(f.charged).toEqual([10])
    expect(prompts).toHaveLength(1)
    const failure = result.steps[0]?.content.find((p) => p.type === "tool-error")?.error as Error
    expect(failure.message).toBe(
      "Ledger storage unavailable: the call may have taken effect. Do not call it again now.",
    )
    expect((failure.cause as { code?: string }).code).toBe("ledger_file_lock_timeout")
  })

  it("OpenAI Agents, a file lock held past its timeout: the run fails with the store's error, charged once", async () => {
    const f = lockedAtCompletion()
    const options = { name: "pay", description: "pay", parameters: cents, execute: f.pay }
    const pay = agentsTool(guardToolOptions(f.ledger, options, { binding }))
    const turns = twice.map((step) => step.map((c) => ({ callId: c.id, name: c.tool, args: c.input })))
    const model = new ScriptedModel(turns, f.unlock)
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const failure = await runner
      .run(new Agent({ name: "payer", model: "scripted", tools: [pay] }), "pay")
      .then(
        () => null,
        (e: unknown) => (e as { error?: { code?: string } }).error,
      )
    f.unlock()
    expect(failure?.code).toBe("ledger_file_lock_timeout")
    expect(model.requests).toHaveLength(1)
    expect(f.charged).toEqual([10])
  })

  it("LangGraph, a file lock held past its timeout: ToolNode's message is the fixed text, not the lock's path", async () => {
    const f = lockedAtCompletion()
    const pay = guardLgTool(f.ledger, lcTool(f.pay, { name: "pay", description: "pay", schema: cents }), {
      binding,
    })
    const graph = scriptedGraph([pay], [{ id: "call_a", name: "pay", args: { cents: 10 } }])
    const state = await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t" } },
    )
    f.unlock()
    const text = String(toolMessages(state)[0]?.content)
    expect(text).toContain("Ledger storage unavailable")
    expect(text).not.toContain(f.dir)
    expect(f.charged).toEqual([10])
  })
})
