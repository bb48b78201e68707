// An app that uses only the action ledger does not ship the receipts, task or state code, and never jose; and the core
// entry as a whole (what a bundler without tree-shaking, or a URL import, loads) holds no other guard family.
import { build } from "esbuild"
import { expect, it } from "vitest"

async function keptFiles(contents: string): Promise<string[]> {
  const out = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: "ts" },
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "neutral",
    logLevel: "silent",
  })
  const [output] = Object.values(out.metafile.outputs)
  return Object.entries(output?.inputs ?? {})
    .filter(([, v]) => v.bytesInOutput > 0)
    .map(([k]) => k)
}

it("a bundle importing only ActionLedger keeps no receipts/tasks/state code and no jose", async () => {
  const kept = await keptFiles(
    'import { ActionLedger } from "./src/index.ts"; export const l = new ActionLedger()',
  )
  expect(kept.some((f) => f.includes("src/core/ledger/action-ledger.ts"))).toBe(true)
  expect(
    kept.filter((f) => /src\/core\/(receipts|tasks|state)\//.test(f) || f.includes("node_modules")),
  ).toEqual([])
})

it("the whole core entry keeps no tools, transcript, receipts, tasks or state code; their entries do", async () => {
  const families = /src\/core\/(tools|transcript|receipts|tasks|state)\//
  const core = await keptFiles('export * from "./src/index.ts"')
  expect(core.some((f) => f.includes("src/core/context/"))).toBe(true)
  expect(core.filter((f) => families.test(f))).toEqual([])
  // The check can see a family: each entry keeps its own folder's code.
  for (const family of ["tools", "transcript", "receipts", "tasks", "state"]) {
    const kept = await keptFiles(`export * from "./src/${family}.ts"`)
    expect(
      kept.some((f) => f.startsWith(`src/core/${family}/`)),
      family,
    ).toBe(true)
  }
})
