// One OS process of the file-ledger race: 25 concurrent calls of one ledgered tool against a shared file. Each
// execution of the effect appends a line to a separate file, so the parent counts executions from the outside.
import { appendFileSync, existsSync } from "node:fs"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { ActionLedger } from "../../src/core/index.ts"

const [ledgerPath, effectsPath, worker, goFile] = process.argv.slice(2) as [string, string, string, string]
const ledger = new ActionLedger({
  storage: new FileLedgerStorage(ledgerPath),
  leaseTtl: 60,
  pollInterval: 0.01,
  owner: worker,
  onWarning: () => {},
})
const pay = ledger.tool(
  {
    name: "send_payment",
    binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" },
  },
  async (args: { amount: number; round: number }, tx) =>
    tx.sideEffect(async () => {
      appendFileSync(effectsPath, `${args.round} ${worker}\n`)
      return { charged: args.amount, round: args.round }
    }),
)

// Start together: the processes boot at different speeds, so each reports ready and waits for the parent's go.
process.stderr.write("ready\n")
while (!existsSync(goFile)) await new Promise((r) => setTimeout(r, 1))
// Several rounds, one dispatch id each: rounds overlap across processes, so a lost update (one process's write
// replacing another's rows) would show up as a second execution of some round.
const rounds = Number(process.argv[6] ?? 1)
const results = []
for (let round = 0; round < rounds; round++) {
  const calls = await Promise.all(
    Array.from({ length: 25 }, () =>
      pay({ amount: 100, round }, { toolCallId: `call_race_${round}` }).then(
        (r) => ({ ok: true as const, r }),
        (e: unknown) => ({ ok: false as const, e: String(e) }),
      ),
    ),
  )
  results.push(...calls)
}
process.stdout.write(JSON.stringify(results))
