// Per-call cost of the ledger on the memory store: fresh calls and replays, with 100 and 10,000 rows stored.
// The ratio column compares against an unledgered call of the same async function, measured in this run.
import { ActionLedger, configureSha256, MemoryLedgerStorage } from "../src/core/index.ts"
import "../src/node.ts"

const binding = { agentId: "bench", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const body = async (args: { amount: number; recipient: string }) => ({ ok: true, amount: args.amount })

async function time(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(2000, n); i++) await fn(-i - 1) // warm-up on distinct inputs
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn(i)
  return ((performance.now() - t0) * 1000) / n
}

const baseline = await time(50_000, (i) => body({ amount: i, recipient: "acct_1" }))
console.log(`plain async call: ${baseline.toFixed(2)} µs`)
console.log("hash | rows stored | fresh call µs | replay µs | fresh + sideEffect µs")

const nativeHash = (await import("node:crypto")).hash
for (const [hash, rows] of [
  ["native", 100],
  ["native", 10_000],
  ["js", 100],
  ["js", 10_000],
] as const) {
  // "native": node:crypto through `mycelium-runtime/node`; "js": the core's own digest (browsers, plain Workers).
  configureSha256(hash === "native" ? (input) => nativeHash("sha256", input, "hex") : null)
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  const pay = ledger.tool({ name: "send_payment", binding }, body)
  const fx = ledger.tool(
    { name: "send_payment_fx", binding },
    async (a: { amount: number; recipient: string }, tx) => tx.sideEffect(() => body(a)),
  )
  for (let i = 0; i < rows; i++) await pay({ amount: i, recipient: "acct_seed" }, { toolCallId: `seed-${i}` })
  let run = 0
  const fresh = await time(20_000, (i) =>
    pay({ amount: i, recipient: "acct_1" }, { toolCallId: `f-${rows}-${run++}-${i}` }),
  )
  await pay({ amount: 1, recipient: "acct_1" }, { toolCallId: "replayed" })
  const replay = await time(50_000, () => pay({ amount: 1, recipient: "acct_1" }, { toolCallId: "replayed" }))
  const withFx = await time(20_000, (i) =>
    fx({ amount: i, recipient: "acct_1" }, { toolCallId: `x-${rows}-${run++}-${i}` }),
  )
  console.log(
    `${hash.padEnd(6)} | ${String(rows).padStart(11)} | ${fresh.toFixed(2).padStart(13)} | ${replay.toFixed(2).padStart(9)} | ${withFx.toFixed(2).padStart(21)}`,
  )
}
console.log(
  "(the Python original at 100, 1,000 and 10,000 rows: npm run bench powertools, with MYCELIUM_PY_SRC)",
)
