// `npm run bench [filter]`: runs every bench/*.bench.ts in its own process, one after another, so no benchmark
// warms or pollutes another's heap.
import { spawnSync } from "node:child_process"
import { readdirSync } from "node:fs"

const filter = process.argv[2] ?? ""
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".bench.ts") && f.includes(filter))
  .sort()
let failed = 0
for (const f of files) {
  console.log(`\n# ${f}`)
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${f}`], {
    stdio: "inherit",
    env: process.env,
  })
  if (r.status !== 0) failed++
}
process.exit(failed ? 1 : 0)
