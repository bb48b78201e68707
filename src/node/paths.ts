// Symlink-aware path scoping for runtimes with a filesystem (Node, Deno, Bun). The core's check is
// lexical only; here the candidate and the roots are resolved with realpath, so a symlink inside an
// allowed root that points outside it is refused. Not a sandbox: the file can change between check and use.
import { lstat, readlink, realpath } from "node:fs/promises"
import {
  type BoundedOptions,
  type BoundedTool,
  bounded,
  normalizePath,
  type PathResolver,
} from "../core/tools/index.ts"

/**
 * Resolves symlinks like Python's `Path.resolve()`: strictly when the path exists; otherwise component by
 * component, following every link on the way, dangling ones included, and appending the missing tail (already
 * free of `..`). A dangling link inside a root that points outside it resolves outside: writing through it would
 * create the file at its target.
 */
export const realpathResolver: PathResolver = async (absolutePath) => {
  const normalized = normalizePath(absolutePath)
  try {
    return await realpath(normalized)
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error
  }
  return resolveMissing(normalized, 0)
}

// Past this many links the path loops (Linux gives up at 40 too).
const MAX_LINKS = 40

async function resolveMissing(path: string, links: number): Promise<string> {
  const segments = path.split("/").filter(Boolean)
  let resolved = "/"
  for (const [i, seg] of segments.entries()) {
    const next = normalizePath(`${resolved}/${seg}`)
    let info: Awaited<ReturnType<typeof lstat>>
    try {
      info = await lstat(next)
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT") throw error
      return normalizePath(`${next}/${segments.slice(i + 1).join("/")}`)
    }
    if (!info.isSymbolicLink()) {
      resolved = next
      continue
    }
    if (links >= MAX_LINKS)
      throw Object.assign(new Error(`Too many symbolic links in ${path}`), { code: "ELOOP" })
    const target = await readlink(next)
    const joined = normalizePath(target.startsWith("/") ? target : `${resolved}/${target}`)
    resolved = await resolveMissing(joined, links + 1)
  }
  return resolved
}
/** `bounded()` with symlink-resolving path checks; relative paths resolve against the working directory. */
export function boundedNode<A extends object, R>(
  fn: (args: A) => R | Promise<R>,
  options: BoundedOptions,
): BoundedTool<A, R> {
  return bounded(fn, { baseDir: process.cwd(), pathResolver: realpathResolver, ...options })
}
