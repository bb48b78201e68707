// What an integration adds per call over `ledger.tool()` itself (memory store, native hash): the AI SDK wrapper
// builds one ledgered function per call and re-validates the input with the tool's zod schema. Measured as
// interleaved rounds in one process, so machine noise hits both sides alike.
import type { ToolExecutionOptions } from "ai"
import { z } from "zod"
import { ActionLedger, configureSha256, MemoryLedgerStorage } from "../src/core/index.ts"
import { guardTool } from "../src/integrations/ai-sdk.ts"

const nativeHash = (await import("node:crypto")).hash
configureSha256((input) => nativeHash("sha256", input, "hex"))

const binding = { agentId: "bench", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
type Args = { amount: number; recipient: string }
const body = async (args: Args) => ({ ok: true, amount: args.amount })
const inputSchema = z.object({ amount: z.number(), recipient: z.string() })

async function time(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn(i)
  return ((performance.now() - t0) * 1000) / n
}

const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
const direct = ledger.tool<Args, unknown>({ name: "pay_direct", binding }, (a, tx) =>
  tx.sideEffect(() => body(a)),
)
const noBounds = guardTool(ledger, { inputSchema, execute: body }, { name: "pay_ai", binding, bounds: false })
const withBounds = guardTool(ledger, { inputSchema, execute: body }, { name: "pay_ai_zod", binding })
const opts = (id: string): ToolExecutionOptions => ({ toolCallId: id, messages: [] })
const execNoBounds = noBounds.execute as (a: Args, o: ToolExecutionOptions) => Promise<unknown>
const execBounds = withBounds.execute as (a: Args, o: ToolExecutionOptions) => Promise<unknown>

let k = 0
const rows: string[] = []
for (let round = 0; round < 4; round++) {
  const r = round
  const d = await time(10_000, (i) =>
    direct({ amount: i, recipient: "acct_1" }, { toolCallId: `d${r}-${i}-${k++}` }),
  )
  const a = await time(10_000, (i) =>
    execNoBounds({ amount: i, recipient: "acct_1" }, opts(`a${r}-${i}-${k++}`)),
  )
  const z2 = await time(10_000, (i) =>
    execBounds({ amount: i, recipient: "acct_1" }, opts(`z${r}-${i}-${k++}`)),
  )
  const dr = await time(20_000, () => direct({ amount: 1, recipient: "acct_1" }, { toolCallId: "d-replay" }))
  const ar = await time(20_000, () => execBounds({ amount: 1, recipient: "acct_1" }, opts("a-replay")))
  if (round > 0) rows.push([d, a, z2, dr, ar].map((v) => v.toFixed(2).padStart(8)).join(" |"))
}
console.log("µs per call, rounds 2-4 (round 1 warms up); dir-rep/zod-rep: replays of one call id")
console.log("  direct |  ai-sdk |  ai+zod | dir-rep | zod-rep")
for (const row of rows) console.log(row)
