// An app that uses only the action ledger does not ship the receipts, task or state code, and never jose.
import { build } from "esbuild"
import { expect, it } from "vitest"

it("a bundle importing only ActionLedger keeps no receipts/tasks/state code and no jose", async () => {
  const out = await build({
    stdin: {
      contents: 'import { ActionLedger } from "./src/index.ts"; export const l = new ActionLedger()',
      resolveDir: process.cwd(),
      loader: "ts",
    },
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "neutral",
    logLevel: "silent",
  })
  const [output] = Object.values(out.metafile.outputs)
  const kept = Object.entries(output?.inputs ?? {})
    .filter(([, v]) => v.bytesInOutput > 0)
    .map(([k]) => k)
  expect(kept.some((f) => f.includes("src/core/ledger/action-ledger.ts"))).toBe(true)
  expect(
    kept.filter((f) => /src\/core\/(receipts|tasks|state)\//.test(f) || f.includes("node_modules")),
  ).toEqual([])
})
