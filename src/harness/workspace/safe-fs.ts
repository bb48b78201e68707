// File access confined to the workspace root. Node has no openat(), so each component is checked with lstat
// (no symlinks, directories only on the way down), a read's open uses O_NOFOLLOW, a write renames a new file over
// the name (`safeWrite`), and the real path must stay inside the root's real path.

import { randomUUID } from "node:crypto"
import { constants } from "node:fs"
import { access, lstat, mkdir, open, realpath, rename, rm } from "node:fs/promises"
import { dirname, isAbsolute, join, sep } from "node:path"
import { MyceliumError } from "../../core/errors.ts"

export const MAX_FILE_BYTES = 1024 * 1024
export const MAX_PATH_CHARS = 4096

/** A path or file the workspace refuses; its message is safe to show the agent. */
export class WorkspacePathError extends MyceliumError {
  override readonly name = "WorkspacePathError"
  override readonly code = "workspace_path_refused"
}

/**
 * Workspace-relative components of `path`. A path under `workdir` is made relative; any other absolute path is
 * refused (the original reduced it to its basename, silently writing `/etc/x` to `<root>/x`).
 */
export function pathComponents(path: unknown, workdir: string): string[] {
  if (typeof path !== "string" || path.length === 0)
    throw new WorkspacePathError("path must be a non-empty string")
  if (path.length > MAX_PATH_CHARS)
    throw new WorkspacePathError(`path is longer than ${MAX_PATH_CHARS} characters`)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\u0000-\u001f]/.test(path)) throw new WorkspacePathError("path contains control characters")
  let rel = path
  if (isAbsolute(path)) {
    const prefix = workdir.endsWith(sep) ? workdir : workdir + sep
    if (!path.startsWith(prefix))
      throw new WorkspacePathError(
        `absolute path ${path} is outside the workspace; use a path relative to it`,
      )
    rel = path.slice(prefix.length)
  }
  const parts = rel.split("/")
  for (const p of parts)
    if (p === "" || p === "." || p === "..")
      throw new WorkspacePathError(`path ${JSON.stringify(path)} has an empty, '.' or '..' component`)
  return parts
}

async function lstatOrNull(p: string) {
  try {
    return await lstat(p)
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return null
    throw e
  }
}

/** Walks the parent directories; refuses a symlink or non-directory among them. Creates missing ones if asked. */
async function walkParents(root: string, parts: readonly string[], create: boolean): Promise<string> {
  let dir = root
  for (const p of parts.slice(0, -1)) {
    dir = join(dir, p)
    const st = await lstatOrNull(dir)
    if (st === null) {
      if (!create) throw new WorkspacePathError(`no such directory: ${parts.join("/")}`)
      await mkdir(dir, { mode: 0o700 })
      continue
    }
    if (st.isSymbolicLink()) throw new WorkspacePathError("a parent directory is a symlink; refused")
    if (!st.isDirectory()) throw new WorkspacePathError("a parent path component is not a directory")
  }
  const rootReal = await realpath(root)
  const dirReal = await realpath(dir)
  if (dirReal !== rootReal && !dirReal.startsWith(rootReal + sep))
    throw new WorkspacePathError("path resolves outside the workspace; refused")
  return join(dir, parts[parts.length - 1] as string)
}

const NOFOLLOW = constants.O_NOFOLLOW ?? 0
// A FIFO opened without O_NONBLOCK waits for its other end forever, holding a libuv threadpool thread (four of them
// stall every file operation of the process). With it, the open returns and fstat refuses the non-regular file;
// regular files ignore the flag.
const NONBLOCK = constants.O_NONBLOCK ?? 0

/** Reads a regular file of at most 1 MiB under root, decoding UTF-8 with replacement. */
export async function safeRead(root: string, parts: readonly string[]): Promise<string> {
  const full = await walkParents(root, parts, false)
  const fh = await open(full, constants.O_RDONLY | NOFOLLOW | NONBLOCK).catch((e: { code?: string }) => {
    if (e.code === "ELOOP") throw new WorkspacePathError("the file is a symlink; refused")
    if (e.code === "ENOENT") throw new WorkspacePathError(`no such file: ${parts.join("/")}`)
    throw e
  })
  try {
    const st = await fh.stat()
    if (!st.isFile()) throw new WorkspacePathError("not a regular file")
    if (st.size > MAX_FILE_BYTES) throw new WorkspacePathError(`file is larger than ${MAX_FILE_BYTES} bytes`)
    const buf = await fh.readFile()
    if (buf.byteLength > MAX_FILE_BYTES)
      throw new WorkspacePathError(`file is larger than ${MAX_FILE_BYTES} bytes`)
    return new TextDecoder("utf-8").decode(buf)
  } finally {
    await fh.close()
  }
}

/**
 * Writes (creating parents 0700, a new file 0600, an existing file keeping its mode) and fsyncs. Returns the bytes
 * written.
 *
 * The content goes to a fresh file in the same directory, renamed over the target. Written in place, a target that
 * is a hard link (pnpm's node_modules into its global store, `git clone --local`, `cp -al`) rewrote the file outside
 * the workspace that shares its inode; no symlink is involved, so O_NOFOLLOW and the realpath check let it through.
 * The rename replaces the name instead, never writing through whatever it names: also a symlink or FIFO swapped in
 * after the lstat below. A crash mid-write leaves the old file whole, and a reader (a command running meanwhile)
 * sees the old content or the new, never a truncated file.
 */
export async function safeWrite(root: string, parts: readonly string[], content: string): Promise<number> {
  // UTF-8 has at least one byte per UTF-16 unit: too many characters is too many bytes, refused before encoding.
  if (content.length > MAX_FILE_BYTES) throw tooLarge()
  const bytes = new TextEncoder().encode(content)
  if (bytes.byteLength > MAX_FILE_BYTES) throw tooLarge()
  const full = await walkParents(root, parts, true)
  const existing = await lstatOrNull(full)
  if (existing && !existing.isFile()) throw new WorkspacePathError("target exists and is not a regular file")
  // The rename needs only the directory's write permission: a file made read-only stays so, as an open for writing
  // would have kept it.
  if (existing)
    await access(full, constants.W_OK).catch((e: { code?: string }) => {
      if (e.code !== "ENOENT") throw new WorkspacePathError("the file is read-only")
    })
  // A name of fixed length: one derived from the target's would pass NAME_MAX for a long file name.
  const tmp = join(dirname(full), `.mycelium-${randomUUID()}.tmp`)
  try {
    const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o600)
    try {
      // Set after the open, which the umask narrows: an executable script stays executable.
      await fh.chmod(existing ? existing.mode & 0o777 : 0o600)
      await fh.writeFile(bytes)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, full)
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {})
    throw e
  }
  return bytes.byteLength
}

const tooLarge = () => new WorkspacePathError(`content is larger than ${MAX_FILE_BYTES} bytes`)

/**
 * The UTF-8 content of the file at `path`, or null when it cannot be read or has more than `max` bytes. For files the
 * agent's shell may have written or replaced: a symlink is not followed and a FIFO does not block the open.
 */
export async function readSmall(path: string, max: number): Promise<string | null> {
  try {
    const fh = await open(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK)
    try {
      const buf = new Uint8Array(max + 1)
      const { bytesRead } = await fh.read(buf, 0, max + 1, 0)
      return bytesRead > max ? null : new TextDecoder().decode(buf.subarray(0, bytesRead))
    } finally {
      await fh.close()
    }
  } catch {
    return null
  }
}
