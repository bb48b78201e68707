// What the command line tells its user when it stops: a snake_case code, a message saying what to do, and the
// exit code.
import { MyceliumError } from "../core/errors.ts"

export class CliError extends MyceliumError {
  override readonly name: string = "CliError"
  override readonly code: string = "cli_error"
  readonly exitCode: number = 1
}

/** A command line the CLI cannot run: unknown command, missing or malformed option. */
export class UsageError extends CliError {
  override readonly name = "UsageError"
  override readonly code = "usage_error"
  override readonly exitCode = 2
}

/** A command needs an optional peer dependency that is not installed. */
export class MissingPackageError extends CliError {
  override readonly name = "MissingPackageError"
  override readonly code = "missing_package"
  override readonly exitCode = 2
  constructor(
    readonly command: string,
    readonly packageName: string,
    packages: readonly string[],
  ) {
    super(
      `'mycelium ${command}' needs the optional package '${packageName}': run \`npm install ${packages.join(" ")}\``,
    )
  }
}

/** A file or folder the command cannot read or write: no permission, a read-only disk, a part of the path missing. */
export class FileAccessError extends CliError {
  override readonly name = "FileAccessError"
  override readonly code = "file_access"
}

// A wrapper that only adds context to its cause's message (a store's "unavailable" error quoting Node's). One that
// words its own advice instead (flock missing from PATH) does not quote it, and is kept.
const quotesCause = (e: unknown): e is Error & { cause: Error } =>
  e instanceof Error && e.cause instanceof Error && e.message.includes(e.cause.message)

/**
 * Node's error for a path it could not use (EACCES, EPERM, ...), thrown or quoted by its wrapper, as a
 * FileAccessError naming it; anything else as is.
 */
export function fileAccessError(e: unknown): unknown {
  let fs = e
  // Bounded: a cause chain may loop.
  for (let i = 0; i < 9 && quotesCause(fs); i++) fs = fs.cause
  const { code, path, syscall, message } = (fs ?? {}) as Record<string, unknown>
  if (typeof code !== "string" || typeof path !== "string" || typeof syscall !== "string") return e
  // "EACCES: permission denied, open 'x'": the reason, without the call and path said below.
  const why = /^E[A-Z]+: [^,]+/.exec(String(message))?.[0] ?? code
  return new FileAccessError(`cannot ${syscall} ${path} (${why}): check the path and its permissions`)
}

// Node: "Cannot find package 'zod' imported from …"; Deno: "Could not find package 'zod' …" / "npm package 'zod'";
// Bun: "Cannot find package 'zod' from …". The first quoted bare name is the one that is missing.
const MISSING = /(?:find|resolve) (?:package|module) ['"]((?:@[^/'"]+\/)?[^/'".][^/'"]*)/i

/** Imports a module that needs optional packages; a missing one becomes a MissingPackageError. */
export async function importNeeding<T>(
  command: string,
  packages: readonly string[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load()
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e)
    const name = MISSING.exec(message)?.[1]
    if (name && packages.includes(name)) throw new MissingPackageError(command, name, packages)
    throw e
  }
}
