// Symlink-aware path scoping for runtimes with a filesystem (Node, Deno, Bun). The core's check is
// lexical only; here the candidate and the roots are resolved with realpath, so a symlink inside an
// allowed root that points outside it is refused. Not a sandbox: the file can change between check and use.
import { realpath } from "node:fs/promises"
import {
  type BoundedOptions,
  type BoundedTool,
  bounded,
  normalizePath,
  type PathResolver,
} from "../core/tools/index.ts"

/**
 * Resolves symlinks like Python's `Path.resolve()`: strictly when the path exists; otherwise the deepest
 * existing ancestor is resolved and the missing tail (already free of `..`) is appended.
 */
export const realpathResolver: PathResolver = async (absolutePath) => {
  const normalized = normalizePath(absolutePath)
  try {
    return await realpath(normalized)
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error
  }
  const segments = normalized.split("/").filter(Boolean)
  for (let keep = segments.length - 1; keep >= 0; keep--) {
    const head = `/${segments.slice(0, keep).join("/")}`
    try {
      const real = await realpath(head)
      return normalizePath(`${real}/${segments.slice(keep).join("/")}`)
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT") throw error
    }
  }
  return normalized
}

/** `bounded()` with symlink-resolving path checks; relative paths resolve against the working directory. */
export function boundedNode<A extends object, R>(
  fn: (args: A) => R | Promise<R>,
  options: BoundedOptions,
): BoundedTool<A, R> {
  return bounded(fn, { baseDir: process.cwd(), pathResolver: realpathResolver, ...options })
}
