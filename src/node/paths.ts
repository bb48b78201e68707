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
import { resolveLinks } from "./links.ts"

/**
 * Resolves symlinks like Python's `Path.resolve()`: strictly when the path exists; otherwise component by
 * component, following every link where it is met, dangling ones included, and appending the missing tail. A
 * dangling link inside a root that points outside it resolves outside: writing through it would create the file at
 * its target.
 */
export const realpathResolver: PathResolver = async (absolutePath) => {
  const normalized = normalizePath(absolutePath)
  try {
    return await realpath(normalized)
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error
  }
  return normalizePath(resolveLinks(normalized, true)) // a model's path may be Windows-style anywhere
}

/** `bounded()` with symlink-resolving path checks; relative paths resolve against the working directory. */
export function boundedNode<A extends object, R>(
  fn: (args: A) => R | Promise<R>,
  options: BoundedOptions,
): BoundedTool<A, R> {
  // Per field, so an option forwarded as undefined keeps its default instead of turning the check lexical.
  return bounded(fn, {
    ...options,
    baseDir: options.baseDir ?? process.cwd(),
    pathResolver: options.pathResolver ?? realpathResolver,
  })
}
