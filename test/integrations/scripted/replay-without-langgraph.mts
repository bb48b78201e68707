// Child of adversarial-langgraph-replay.test.ts, run with @langchain/langgraph hidden: the ledger holds a Command's
// JSON for a call (written by another process that has LangGraph), and this process replays it. Prints the error.
import { tool } from "@langchain/core/tools"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { guardTool } from "../../../src/integrations/langgraph.ts"

const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
// The other process's row: what storableResult stores for a Command.
const writer = ledger.tool({ name: "pay", binding }, async () => ({
  lg_name: "Command",
  update: {},
  goto: [],
}))
await writer({ to: "a" }, { toolCallId: "call_1" })
let runs = 0
const pay = tool(async () => `ran ${++runs}`, {
  name: "pay",
  description: "pay",
  schema: z.object({ to: z.string() }),
})
const guarded = guardTool(ledger, pay, { binding })
const out = await guarded
  .invoke({ id: "call_1", name: "pay", args: { to: "a" }, type: "tool_call" })
  .then(() => ({ ok: true }))
  .catch((e: { name?: string; code?: string; message?: string }) => ({
    name: e.name,
    code: e.code,
    message: e.message,
  }))
console.log(JSON.stringify({ ...out, runs }))
