// A durable harness run in its own process. argv: ledgerFile runId logFile mode(crash|resume)
// In crash mode the model hangs on task C's second request (after C's tool ran) and prints READY, so the parent
// can SIGKILL it mid-plan. Every real model request and tool execution is appended to logFile.
import { appendFileSync } from "node:fs"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { ActionLedger } from "../../../src/core/index.ts"
import { type ModelClient, RunFailed, runPlan } from "../../../src/harness/index.ts"
import { hang } from "../../hang.ts"

const [file, runId, log, mode] = process.argv.slice(2) as [
  string,
  string,
  string,
  "crash" | "crash-in-tool" | "resume",
]
const ledger = new ActionLedger({
  storage: new FileLedgerStorage(file),
  leaseTtl: 1,
  pollInterval: 0.05,
  owner: `child-${process.pid}`,
  onWarning: () => {},
})

const model: ModelClient = {
  async request(req) {
    const { task_id, step } = req.context
    appendFileSync(log, `model ${task_id} ${step}\n`)
    if (mode === "crash" && task_id === "C" && step === 1) {
      console.log("READY")
      await hang()
    }
    if (step === 0)
      return {
        parts: [{ type: "tool_call", id: `call-${task_id}`, name: "charge", args: { task: task_id } }],
        usage: { input_tokens: 10, output_tokens: 2 },
      }
    const seen = req.messages.filter((m) => m.role === "tool").map((m) => m.content)
    return {
      parts: [{ type: "text", text: `${task_id} done after ${seen.join(",")}` }],
      usage: { input_tokens: 20, output_tokens: 5 },
    }
  },
}

const plan = {
  tasks: [
    { task_id: "A", prompt: "a" },
    { task_id: "B", prompt: "b" },
    { task_id: "C", prompt: "c", depends_on: ["A", "B"] },
    { task_id: "D", prompt: "d", depends_on: ["C"] },
  ],
  output_task_id: "D",
  plan_id: "plan:durable",
}

const result = await runPlan(
  plan,
  {
    model,
    ledger,
    tools: [
      {
        name: "charge",
        parameters: { type: "object" },
        binding: { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
        execute: async (args) => {
          appendFileSync(log, `tool ${String(args.task)}\n`)
          if (mode === "crash-in-tool" && args.task === "C") {
            console.log("READY")
            await hang() // killed mid-effect: the charge may or may not have happened
          }
          return `charged ${String(args.task)}`
        },
      },
    ],
  },
  { run_id: runId },
).catch((e: unknown) => {
  if (e instanceof RunFailed) return e.result
  throw e
})
console.log(JSON.stringify(result))
