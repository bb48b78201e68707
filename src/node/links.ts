// Symlink resolution that works where realpath fails (a target not created yet), shared by the Node path scopes
// (paths.ts) and the file stores' data path (adapters/file-kit.ts): both must name the file the kernel opens.
// Synchronous, as a file store resolves its path in its constructor.
import { lstatSync, readlinkSync } from "node:fs"

/**
 * An absolute path with every link followed where it is met, dangling ones included, and the missing tail
 * appended; `path` itself when it holds no link. Components are joined with `/`, a drive lowercased. `win`: `\`
 * separates too and `c:` is a drive; else POSIX's reading, where `led\ger.json` is one name. Throws lstat's
 * errors other than ENOENT, and an ELOOP error past 40 links (Linux's limit too), counted over the whole lookup: a
 * budget per directory let l_k -> l_(k-1)/l_(k-1) cost 2^k readlinks.
 *
 * A link's target is spliced in front of the components left, so a `..` after a linked directory climbs from its
 * target, as the kernel does: with ws/d -> ../out/deep, ws/link -> d/../x names out/x, not ws/x.
 *
 * `base`: where a relative path starts, a path already free of links (the working directory, which getcwd()
 * returns resolved), so its own directories are not looked at: Deno given `--allow-read=.` may not lstat them.
 */
export function resolveLinks(path: string, win: boolean, base = ""): string {
  let resolved = base.replace(/\/+$/, "") // no trailing separator: "" or a drive is the root
  let links = 0
  const todo: string[] = []
  const splice = (p: string): void => {
    const drive = win ? /^[A-Za-z]:/.exec(p)?.[0] : undefined
    const segs = p.slice(drive?.length).split(win ? /[\\/]/ : "/")
    if (drive) resolved = drive.toLowerCase()
    else if (!segs[0]) resolved = resolved[0] === "/" ? "" : resolved.slice(0, 2)
    todo.unshift(...segs)
  }
  splice(path)
  while (todo.length) {
    const seg = todo.shift() as string
    if (seg === "..") resolved = resolved.replace(/\/[^/]*$/, "")
    else if (seg && seg !== ".") {
      const next = `${resolved}/${seg}`
      let link = false
      try {
        link = lstatSync(next).isSymbolicLink()
      } catch (error) {
        // Missing: not a link, nor is anything under it.
        if ((error as { code?: string }).code !== "ENOENT") throw error
      }
      if (!link) resolved = next
      else if (++links > 40)
        throw Object.assign(new Error(`Too many symbolic links in ${path}`), { code: "ELOOP" })
      else splice(readlinkSync(next))
    }
  }
  return links ? resolved : path
}
