// `mycelium transitions [--stuck]`: one line per transition of a local ledger file.
import { parseArgs } from "node:util"
import { FileLedgerStorage } from "../../adapters/file.ts"
import { ActionLedger } from "../../core/ledger/index.ts"
import { DEFAULT_LEDGER, parseOrUsage } from "../options.ts"

export async function run(args: string[]): Promise<number> {
  const { values } = parseOrUsage("transitions", () =>
    parseArgs({
      args,
      options: { stuck: { type: "boolean", default: false }, ledger: { type: "string" } },
    }),
  )
  const ledger = new ActionLedger({ storage: new FileLedgerStorage(values.ledger ?? DEFAULT_LEDGER) })
  for (const e of await ledger.listTransitions({ stuck: values.stuck })) {
    console.log(
      `${e.requestId}\t${e.tool}\t${e.terminalOutcome}\t${e.sideEffectBoundary}\t${e.externalOperationRef ?? "-"}`,
    )
  }
  return 0
}
