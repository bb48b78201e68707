// What several commands share: the default ledger file, the port check, and bad flags as usage errors.
import { statSync } from "node:fs"
import { UsageError } from "./errors.ts"

export const DEFAULT_LEDGER = ".mycelium/ledger.json"

/** Host names that stay on this machine: the local server answers only these, and a token may go there over http. */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "localhost", "[::1]"])

/** Runs a `parseArgs` call; an unknown or malformed flag becomes a usage error (exit 2), not a TypeError stack. */
export function parseOrUsage<T>(command: string, parse: () => T): T {
  try {
    return parse()
  } catch (e) {
    throw new UsageError(`${command}: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/**
 * A path the command will read whole must be a regular file when it exists (a symlink to one is fine): a
 * directory fails with a bare EISDIR, and /dev/zero or a FIFO is read forever.
 */
export function requireRegularFile(path: string, what: string): string {
  let st: ReturnType<typeof statSync> | undefined
  try {
    st = statSync(path)
  } catch {
    return path
  }
  if (!st.isFile())
    throw new UsageError(
      `${what} ${path} is ${st.isDirectory() ? "a directory" : "not a regular file"}: pass a file`,
    )
  return path
}

export function parsePort(value: string | undefined): number {
  const port = Number(value ?? "8787")
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be 0..65535, got ${value}`)
  return port
}
