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

// A ".." as Windows reads it: trailing dots and spaces are dropped (".. " and "..." open ".."), a stream name is
// not part of it ("..::$INDEX_ALLOCATION" opens ".."), and C APIs stop at NUL. Separators count because a decoded
// "%2f" splits a segment. A URL parser drops tabs and newlines (".\t." is ".."), strips C0 controls and spaces from
// the ends of its input ("/ws/..\x01" is "/ws/.."), and ends the path at "?" or "#" ("..?x" is ".."); a trim()
// makes " .." a "..". A servlet container (Tomcat, Jetty, Spring) strips a ";" path parameter from each segment,
// so "/api/public/..;/admin" reaches "/admin" there. Only ".." forms: a "." stays where it is, so ".#x" (an Emacs lock
// file) is kept.
// Or a name Windows opens as a device in every folder (Python's ntpath.isreserved, Go's filepath.IsLocal): CON, PRN,
// AUX, NUL, CONIN$, CONOUT$, COM1-9 and LPT1-9 (NFKC folds the superscripts ¹²³ it also reads as digits), in any
// case, with any extension or stream (`nul.txt`, `COM1:`) and trailing spaces and dots (`CON .`): `C:\ws\NUL` is the
// null device, not a file in `C:\ws`.
const ESCAPES =
  /(?:^|[\\/])(?:[\0- \s]*\.[\0- \s]*\.[\0- \s.]*(?::[^\\/]*)?|(?:AUX|CON(?:IN\$|OUT\$)?|NUL|PRN|(?:COM|LPT)[1-9]) *(?:[.:][^\\/]*)?)(?:[\\/?#;]|$)/i

// A path Windows reads outside every drive and folder: `\\.\` and `\\?\` (the device namespaces: `\\.\C:\x`,
// `\\.\pipe\x`), a UNC share (`\\host\share`, which also sends the user's credentials to the host), or the NT
// prefix `\??\`. Normalized here they read as a folder of the root (`/pipe/x`, `/host/share`). Tested NFKC-folded, as
// dot segments are: `/／host` is `//host` there. NUL too: C APIs end the path there.
const NAMESPACE = /\0|^[\\/](?:[\\/]|\?\?[\\/])/

// One URL decoding. decodeURIComponent throws on a bad escape ("%ff", "%zz"), which would hide "%2e%2e%2f%ff":
// unescape() then decodes byte by byte, so every ASCII escape (dots, separators, spaces) is still read.
const decode = (s: string): string => {
  try {
    return decodeURIComponent(s)
  } catch {
    return unescape(s)
  }
}

/**
 * A segment that is not "." or ".." here but holds one elsewhere, or names a device: a URL parser decodes "%2e%2e"
 * (once, or twice for "%252e"), NFKC folds "．．" and "․․" into "..", before or after a decoding ("％２ｅ％２ｅ"), a
 * decoded "%2f" splits the segment, and a C API reads up to a decoded NUL ("..%00.png" opens "..").
 */
const hidesDots = (seg: string): boolean => {
  const forms = [seg, seg.normalize("NFKC")]
  for (const f of [...forms]) forms.push(decode(f), decode(decode(f)))
  // NFKC keeps every dot and whitespace character one, so the folded forms alone are tested.
  return (
    seg !== "." &&
    seg !== ".." &&
    forms.some((s) => ESCAPES.test(s.normalize("NFKC").split("\0", 1)[0] as string))
  )
}

/**
 * Resolves `path` against `baseDir` when relative; undefined when it is no string, cannot be made absolute, hides
 * a dot segment or is read by Windows as a device or share.
 */
export function resolvePath(path: string, baseDir?: string): string | undefined {
  if (typeof path !== "string" || NAMESPACE.test(path.normalize("NFKC"))) return undefined
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
