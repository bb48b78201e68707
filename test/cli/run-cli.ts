// The `mycelium` CLI from source, as a user runs it: a child process (test/cli/cli-bin.ts), in `cwd`, without colours.
import { spawnSync } from "node:child_process"
import { cliCommand } from "./cli-bin.ts"

export interface CliResult {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

export function cliRunner(cwd: string): (args: string[], env?: Record<string, string>) => CliResult {
  return (args, env = {}) => {
    const [cmd, pre] = cliCommand()
    const r = spawnSync(cmd, [...pre, ...args], {
      cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", ...env },
    })
    return { code: r.status, out: r.stdout, err: r.stderr }
  }
}
