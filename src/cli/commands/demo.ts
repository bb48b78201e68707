// `mycelium demo [--serve]`: the duplicate-payment bug and the fix; --serve then serves the demo's ledger file.
import { parseArgs } from "node:util"
import { runDemo } from "../demo-scenario.ts"
import { parseOrUsage, parsePort } from "../options.ts"

// Under .mycelium/, which .gitignore and biome ignore: the demo must never leave a file that lint or git sees.
export const DEMO_LEDGER = ".mycelium/demo-ledger.json"

export async function run(args: string[]): Promise<number> {
  const { values } = parseOrUsage("demo", () =>
    parseArgs({
      args,
      options: {
        serve: { type: "boolean", default: false },
        port: { type: "string" },
        ledger: { type: "string" },
      },
    }),
  )
  const port = parsePort(values.port)
  const ledgerPath = values.ledger ?? DEMO_LEDGER
  await runDemo({ ledgerPath })
  if (values.serve) {
    const { startApi } = await import("./serve.ts")
    await startApi("demo --serve", ledgerPath, port)
  }
  return 0
}
