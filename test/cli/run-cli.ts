// The `mycelium` CLI from source, as a user runs it: a child process under tsx, in `cwd`, without colours.
import { spawnSync } from "node:child_process"
import { resolve } from "node:path"

const main = resolve("src/cli/main.ts")
const tsx = resolve("node_modules/.bin/tsx")

export interface CliResult {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

export function cliRunner(cwd: string): (args: string[], env?: Record<string, string>) => CliResult {
  return (args, env = {}) => {
    const r = spawnSync(tsx, [main, ...args], {
      cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", ...env },
    })
    return { code: r.status, out: r.stdout, err: r.stderr }
  }
}
