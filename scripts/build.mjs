// `npm run build` (and `prepack`): dist/ holds the JS and .d.ts of every library entry and the CLI's JS, nothing
// else. No source maps: they would point at sources the package does not ship. The CLI is a bin, so its
// declarations serve no one; the Cloudflare worker entry is deployed from src/ by wrangler, so it is not built.
import { spawnSync } from "node:child_process"
import { chmodSync, readdirSync, rmSync } from "node:fs"
import { join } from "node:path"

rmSync("dist", { recursive: true, force: true })
const tsc = spawnSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
if (tsc.status !== 0) process.exit(tsc.status ?? 1)

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)],
  )
for (const file of walk("dist/cli")) if (file.endsWith(".d.ts")) rmSync(file)
chmodSync("dist/cli/main.js", 0o755)
