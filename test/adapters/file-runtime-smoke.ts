// Run by file-runtimes.test.ts under Deno and Bun: one ledgered tool on a file store, 10 concurrent redispatches,
// then a second ledger instance reads the same file back. Prints one JSON line.
import process from "node:process"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { ActionLedger } from "../../src/core/index.ts"

const path = process.argv[2] as string
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
let runs = 0
const ledger = new ActionLedger({ storage: new FileLedgerStorage(path), leaseTtl: 60, onWarning: () => {} })
const t = ledger.tool({ name: "t", binding }, async (a: { x: number }, tx) =>
  tx.sideEffect(async () => ({ n: ++runs, x: a.x })),
)
const results = await Promise.all(Array.from({ length: 10 }, () => t({ x: 1 }, { toolCallId: "c" })))
const reread = new ActionLedger({ storage: new FileLedgerStorage(path), onWarning: () => {} })
const rows = await reread.listTransitions()
console.log(
  JSON.stringify({
    runs,
    results: new Set(results.map((r) => JSON.stringify(r))).size,
    rows: rows.length,
    outcome: rows[0]?.terminalOutcome,
  }),
)
