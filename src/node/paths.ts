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
  return resolveMissing(normalized)
}

// Past this many links the path loops (Linux gives up at 40 too).
const MAX_LINKS = 40

// A link's target is spliced in front of the components left, so a `..` after a linked directory climbs from its
// target, as the kernel does: with ws/d -> ../out/deep, ws/link -> d/../x names out/x, not ws/x.
async function resolveMissing(path: string): Promise<string> {
  let resolved = "" // no trailing separator: "" or a drive is the root
  const todo: string[] = []
  const splice = (p: string): void => {
    const drive = /^[A-Za-z]:/.exec(p)?.[0]
    if (drive) resolved = drive.toLowerCase()
    else if (/^[\\/]/.test(p)) resolved = /^[a-z]:/.exec(resolved)?.[0] ?? ""
    todo.unshift(...p.slice(drive?.length ?? 0).split(/[\\/]/))
  }
  splice(path)
  for (let links = 0, seg = todo.shift(); seg !== undefined; seg = todo.shift()) {
    if (seg === "" || seg === ".") continue
    if (seg === "..") {
      resolved = resolved.replace(/\/[^/]*$/, "")
      continue
    }
    const next = `${resolved}/${seg}`
    const info = await lstat(next).catch((error: { code?: string }) => {
      // Missing: not a link, nor is anything under it.
      if (error.code !== "ENOENT") throw error
    })
    if (!info?.isSymbolicLink()) resolved = next
    else if (++links > MAX_LINKS)
      throw Object.assign(new Error(`Too many symbolic links in ${path}`), { code: "ELOOP" })
    else splice(await readlink(next))
  }
  return normalizePath(resolved)
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
