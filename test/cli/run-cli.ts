// The `mycelium` CLI from source, as a user runs it: a child process (test/cli/cli-bin.ts), in `cwd`, without colours.
import { spawnSync } from "node:child_process"
import { cliCommand } from "./cli-bin.ts"

export interface CliResult {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

export interface CliRunOptions {
  /** Node's own arguments before the CLI's (see `withoutPackage`). */
  nodeArgs?: string[]
  /** Killed after this many ms: an endless read shows as a null exit code, not a hung suite. */
  timeout?: number
  /** Run as this user (root's tests run the CLI as nobody, for whom file modes count). */
  uid?: number
  gid?: number
  /** Bytes of stdout or stderr kept (spawnSync's default, 1 MiB, kills a child printing more). */
  maxBuffer?: number
}

export function cliRunner(
  cwd: string,
  options: CliRunOptions = {},
): (args: string[], env?: Record<string, string>) => CliResult {
  const { nodeArgs = [], ...spawnOptions } = options
  return (args, env = {}) => {
    const [cmd, pre] = cliCommand()
    const r = spawnSync(cmd, [...nodeArgs, ...pre, ...args], {
      cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", ...env },
      ...spawnOptions,
    })
    return { code: r.status, out: r.stdout, err: r.stderr }
  }
}

/** Node arguments under which `pkg` (and its subpaths) resolves as Node resolves a package that is not installed. */
export function withoutPackage(pkg: string): string[] {
  const hook = `export async function resolve(s, c, next) {
    if (s === ${JSON.stringify(pkg)} || s.startsWith(${JSON.stringify(`${pkg}/`)})) {
      const e = new Error("Cannot find package '${pkg}' imported from " + c.parentURL)
      e.code = "ERR_MODULE_NOT_FOUND"
      throw e
    }
    return next(s, c)
  }`
  const register = `import { register } from "node:module"
    register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)})`
  return ["--import", `data:text/javascript,${encodeURIComponent(register)}`]
}
