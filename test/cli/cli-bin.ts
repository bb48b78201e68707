// How a test starts the CLI: node on the bundle test/cli/build-cli.ts made of src/cli/main.ts for this run.
import { type ChildProcess, spawn } from "node:child_process"
import { inject } from "vitest"

declare module "vitest" {
  export interface ProvidedContext {
    cliMain: string
  }
}

/** The command and leading arguments that run `mycelium`; append the CLI's own arguments. */
export const cliCommand = (): [string, string[]] => [process.execPath, [inject("cliMain")]]

/**
 * Starts `mycelium serve --port 0 ARGS` (in `cwd`, with `env` added) and resolves with the port it listens on; the
 * process goes into `children` for the file's afterAll to stop.
 */
export function serveOnFreePort(
  children: ChildProcess[],
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<number> {
  const [cmd, pre] = cliCommand()
  const child = spawn(cmd, [...pre, "serve", "--port", "0", ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { ...process.env, NO_COLOR: "1", ...options.env },
  })
  children.push(child)
  let out = ""
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no API after 30 s:\n${out}`)), 30_000)
    const on = (d: unknown) => {
      out += String(d)
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)
      if (m?.[1]) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    child.stdout?.on("data", on)
    child.stderr?.on("data", on)
    child.once("exit", (code) => reject(new Error(`serve exited ${code}:\n${out}`)))
  })
}
