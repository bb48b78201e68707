// `npm run bench [filter]`: runs every bench/*.bench.ts in its own process, one after another, so no benchmark
// warms or pollutes another's heap. Each also runs once more bundled by esbuild, as production code ships:
// a bundle lets V8 inline across what are module boundaries under tsx, and the two numbers differ by up to 2x.
import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { build } from "esbuild"

const filter = process.argv[2] ?? ""
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".bench.ts") && f.includes(filter))
  .sort()
const out = mkdtempSync(join(tmpdir(), "mycelium-bench-"))
let failed = 0
try {
  for (const f of files) {
    console.log(`\n# ${f} (tsx, unbundled)`)
    const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${f}`], {
      stdio: "inherit",
      env: process.env,
    })
    if (r.status !== 0) failed++
    if (!f.startsWith("ledger")) continue // the adapter benches are dominated by I/O, not by inlining
    const bundle = join(out, f.replace(/\.ts$/, ".mjs"))
    await build({
      entryPoints: [`bench/${f}`],
      bundle: true,
      platform: "node",
      format: "esm",
      outfile: bundle,
      logLevel: "error",
      // CommonJS dependencies (Powertools' Redis client) require() Node built-ins; an ESM bundle has no require.
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    })
    console.log(`\n# ${f} (bundled by esbuild)`)
    const b = spawnSync(process.execPath, [bundle], { stdio: "inherit", env: process.env })
    if (b.status !== 0) failed++
  }
} finally {
  rmSync(out, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
