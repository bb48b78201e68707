// `mycelium release ID --verified ... --reason ... --by ...`: an operator's verdict on a stuck transition.
import { parseArgs } from "node:util"
import { FileLedgerStorage } from "../../adapters/file.ts"
import { ActionLedger } from "../../core/ledger/index.ts"
import { UsageError } from "../errors.ts"
import { DEFAULT_LEDGER, parseOrUsage } from "../options.ts"

const USAGE = "release ID --verified completed|not_executed --reason TEXT --by WHO [--ledger PATH]"

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("release", () =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        verified: { type: "string" },
        reason: { type: "string" },
        by: { type: "string" },
        ledger: { type: "string" },
      },
    }),
  )
  const [id, ...extra] = positionals
  const verified = values.verified
  if (!id || extra.length || (verified !== "completed" && verified !== "not_executed"))
    throw new UsageError(USAGE)
  if (!values.reason || !values.by) throw new UsageError(USAGE)
  const ledger = new ActionLedger({
    storage: new FileLedgerStorage(values.ledger ?? DEFAULT_LEDGER),
    // An operator at a terminal may not see the worker: refuse a lapsed lease whose worker still looks alive.
    reclaimRequiresDeathSignal: true,
  })
  const row = await ledger.release(id, { verified, reason: values.reason, by: values.by })
  console.log(`released ${row.requestId} as ${verified} (was ${row.releasedFromOutcome})`)
  return 0
}
