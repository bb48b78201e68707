// Lexical path containment for runtimes without a filesystem. Backslashes count as separators so a
// Windows-style "..\\" cannot slip past a POSIX-only check; symlinks are not followed here (see
// src/node/paths.ts for the realpath variant).

/** Normalizes an absolute path: collapses `.`, `..`, repeated and trailing separators. */
export function normalizePath(path: string): string {
  const unified = path.replace(/\\/g, "/")
  const drive = /^[A-Za-z]:(?=\/|$)/.exec(unified)?.[0]
  const rest = drive ? unified.slice(drive.length) : unified
  const out: string[] = []
  for (const seg of rest.split("/")) {
    if (seg === "" || seg === ".") continue
    if (seg === "..") out.pop()
    else out.push(seg)
  }
  return `${drive ? drive.toLowerCase() : ""}/${out.join("/")}`
}

export function isAbsolutePath(path: string): boolean {
  return /^(?:[A-Za-z]:)?[\\/]/.test(path)
}

// Segments that are not "." or ".." here but become them elsewhere: a URL parser reads "%2e%2e" as "..", and
// Windows drops trailing dots and spaces (".. " opens ".."). The tool may hand its path to either.
const DISGUISED_DOTS = /^(?:\.|%2e|%252e)(?:\.|%2e|%252e|\s)*$/i

// A separator the same decoding turns "..%2f.." into: the dot segments between them are not collapsed here.
const ENCODED_SEPARATOR = /%(?:25)?(?:2f|5c)/i

/** A segment that becomes "." or ".." (or several) once a URL parser or Windows reads it. */
const hidesDots = (seg: string): boolean => {
  const parts = seg.split(ENCODED_SEPARATOR)
  return parts.length > 1
    ? parts.some((p) => DISGUISED_DOTS.test(p))
    : seg !== "." && seg !== ".." && DISGUISED_DOTS.test(seg)
}

/** Resolves `path` against `baseDir` when relative; undefined when it cannot be made absolute or hides a dot segment. */
export function resolvePath(path: string, baseDir?: string): string | undefined {
  if (path.includes("\0")) return undefined
  if (path.split(/[\\/]/).some(hidesDots)) return undefined
  if (isAbsolutePath(path)) return normalizePath(path)
  if (baseDir === undefined || !isAbsolutePath(baseDir)) return undefined
  return normalizePath(`${baseDir}/${path}`)
}

/** True when `candidate` equals `root` or lies below it, component-wise (`/a/src2` is not under `/a/src`). */
export function isPathUnder(candidate: string, root: string): boolean {
  if (candidate === root) return true
  const prefix = root.endsWith("/") ? root : `${root}/`
  return candidate.startsWith(prefix)
}
