import {
  isAlias,
  isCollection,
  isMap,
  isPair,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  type Node,
  parseDocument,
  type Scalar,
} from "yaml"
import { ConfigError, type ConfigLocation } from "./errors.ts"
import { pythonStr, pythonText, pythonValue } from "./python-yaml.ts"

type Path = ConfigLocation["path"]
type Fail = (detail: string, path: Path, offset: number | undefined) => ConfigError
const TAG = "tag:yaml.org,2002:"

// Its methods spell out the path type: `Path` is local, and a consumer could not name it.
/** A parsed YAML document that can say where any key path sits in the text (what `expandEnv` reports against). */
export interface ConfigSource {
  readonly value: unknown
  readonly name: string
  locate(path: ConfigLocation["path"], key?: boolean): ConfigLocation
  error(detail: string, path: ConfigLocation["path"], key?: boolean): ConfigError
}

/** A ConfigSource read from YAML text. */
interface ParsedSource extends ConfigSource {
  /** Refuses a string of the validated document that was a plain scalar PyYAML reads as no text. */
  checkText(value: unknown): void
}

// Real configs are a few KB (a thousand tools, 40 KB); 1 MiB holds 25,000 and loads in about 3 s. Unbounded, 50 MB
// took 209 s and 3.4 GB. Aliases may expand to a million values, about what such a file holds (see checkKeys).
const MAX_BYTES = 1 << 20
const MAX_NODES = 1e6

/** Refuses a config of more than 1 MiB (`bytes`: its size as stored) before it is read. */
export function refuseSize(bytes: number, name: string): void {
  if (bytes > MAX_BYTES)
    throw new ConfigError(
      "over 1 MiB, the limit for a config: check that this is the config file",
      { path: [] },
      name,
    )
}

/**
 * A config file's bytes as PyYAML reads them: UTF-16 after its byte order mark, else UTF-8. Other bytes are refused
 * at the first of them, as there: decoded as U+FFFD, Latin-1 `caf\xE9` and `caf\xE8` were one agent_id.
 */
export function decodeConfig(bytes: Uint8Array, name: string): string {
  const [a, b] = bytes
  const enc = a === 0xff && b === 0xfe ? "utf-16le" : a === 0xfe && b === 0xff ? "utf-16be" : "utf-8"
  try {
    return new TextDecoder(enc, { fatal: true }).decode(bytes)
  } catch {
    const text = new TextDecoder(enc, { ignoreBOM: true }).decode(bytes)
    const utf8 = enc === "utf-8"
    let c = text.indexOf("\uFFFD")
    let at = 0
    // Past any U+FFFD the file holds as such (only UTF-8 is checked): the first that replaced bytes. The bytes of
    // each character are counted on the way, in one walk (re-encoding the text before each U+FFFD was quadratic:
    // 80,000 of them took 10 s). A UTF-16 unit of a surrogate pair is half of 4 bytes.
    if (utf8)
      for (c = 0; c < text.length; c++) {
        const u = text.charCodeAt(c)
        if (u === 0xfffd && (bytes[at] !== 0xef || bytes[at + 1] !== 0xbf || bytes[at + 2] !== 0xbd)) break
        at += u < 0x80 ? 1 : u < 0x800 || u >> 11 === 0x1b ? 2 : 3
      }
    // CRLF, LF and a lone CR each break a line, as in parseConfigSource.
    const lines = text
      .slice(0, c)
      .replace(/^\uFEFF/, "")
      .split(/\r\n?|\n/)
    throw new ConfigError(
      `not valid ${enc.toUpperCase()}${utf8 ? ` (byte 0x${bytes[at]?.toString(16)}: Latin-1?)` : ""}: save the file as UTF-8`,
      { path: [], line: lines.length, column: (lines.at(-1) as string).length + 1 },
      name,
    )
  }
}

/** Parses YAML (1.2 core schema, no custom tags); a syntax error names its line and column. */
export function parseConfigSource(yaml: string, name = "mycelium.yaml"): ParsedSource {
  // Each character is at least a byte: past the limit in characters, no need to count bytes.
  refuseSize(yaml.length > MAX_BYTES ? yaml.length : new TextEncoder().encode(yaml).length, name)
  // A BOM is no column of the first line; a lone CR breaks lines to YAML 1.2 and PyYAML, not to this parser.
  const text = yaml.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n")
  // PyYAML refuses a character outside YAML's printable set anywhere, quoted or in a comment too (the two readers
  // would read another file, and a raw ESC reaches a terminal); an escape ("\x1b") is no such character. NEL, LS and
  // PS are printable there but break lines, where YAML 1.2 reads text: the original would read other keys. One class
  // holds both (in /u, a surrogate only when unpaired; no CR is left), so the first of either is named.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const odd = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\uD800-\uDFFF\uFFFE\uFFFF]/u.exec(text)
  if (odd) {
    const before = text.slice(0, odd.index)
    const c = odd[0]
    throw new ConfigError(
      `character U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}, ${
        "\x85\u2028\u2029".includes(c)
          ? "a line break only PyYAML (the original's reader) sees: use a newline"
          : "which PyYAML (the original's reader) refuses: remove it"
      }`,
      { path: [], line: before.split("\n").length, column: odd.index - before.lastIndexOf("\n") },
      name,
    )
  }
  const lines = new LineCounter()
  // uniqueKeys compares each key with every earlier one of its map: quadratic (16,000 tools took seconds, an 11 MB
  // file minutes). checkKeys finds duplicates with one Set per map instead.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false })
  const first = doc.errors[0]
  if (first) {
    const pos = lines.linePos(first.pos[0])
    const detail = `invalid YAML: ${first.message.split("\n")[0]}`
    throw new ConfigError(detail, { path: [], line: pos.line, column: pos.col }, name)
  }
  const at = (offset: number | undefined, path: Path): ConfigLocation => {
    if (offset === undefined) return { path }
    const p = lines.linePos(offset)
    return { path, line: p.line, column: p.col }
  }
  // PyYAML scans a tab only inside a quoted or block scalar or a comment: as separation (after `key:`, `-` or a flow
  // comma, after a value, on a blank line) or inside a plain scalar it fails ("cannot start any token"), where YAML
  // 1.2 reads white space. The lexer's tokens, less its markers (\x02, \x18, \x1f: characters refused above),
  // spell the text; a block scalar's content is the token after its header's line.
  let offset = 0
  let block = 0
  for (const t of text.includes("\t") ? new Lexer().lex(text) : []) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the lexer's markers are control characters
    if (/^[\x02\x18\x1f]$/.test(t)) continue
    const tab = block > 1 || /^['"#]/.test(t) ? -1 : t.indexOf("\t")
    if (tab >= 0)
      throw new ConfigError(
        "a tab, which PyYAML (the original's reader) cannot read outside quotes, block scalars and comments: use spaces",
        at(offset + tab, []),
        name,
      )
    block = block > 1 ? 0 : /^[|>]/.test(t) ? 1 : block && t === "\n" ? 2 : block
    offset += t.length
  }
  checkKeys(doc.contents, lines, (detail, path, offset) => new ConfigError(detail, at(offset, path), name))
  const locate = (path: Path, key = false): ConfigLocation => {
    // Walk down as far as the path exists; a missing key is reported at its nearest existing parent.
    let node: unknown = doc.contents
    let keyNode: Node | null = null
    for (const step of path) {
      if (isMap(node)) {
        const pair = node.items.find(
          (p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(step),
        )
        if (!pair) break
        keyNode = pair.key as Node
        node = pair.value
      } else if (isSeq(node) && typeof step === "number" && node.items[step]) {
        keyNode = null
        node = node.items[step]
      } else break
    }
    const target = key && keyNode ? keyNode : ((node as Node | null) ?? keyNode)
    return at(target?.range?.[0] ?? keyNode?.range?.[0], path)
  }
  // The scalars whose YAML 1.1 reading enters the ledger's keys, as the original str()s them (python-yaml.ts).
  for (const key of ["agent_id", "policy_version"]) {
    const at = doc.getIn(["transition", key], true)
    // An alias reads as its anchor's scalar, wherever that is; the anchor itself stays as it is.
    const node = isAlias(at) ? at.resolve(doc) : at
    // A tag is read as PyYAML reads it (`!!float 1` is "1.0"), quoted or not; checkKeys refused any it fails on.
    if (isScalar(node) && typeof node.source === "string" && (node.tag || node.type === "PLAIN")) {
      const text = pythonStr(pythonValue(node.source, node.tag?.slice(TAG.length)))
      // PyYAML's None, False, 0 and 0.0 are no value to the original, which refuses them.
      if (!text)
        throw new ConfigError(
          `PyYAML reads no value (False, 0, None) or fails on this value: quote it`,
          locate(["transition", key]),
          name,
        )
      if (node === at) node.value = text
      else doc.setIn(["transition", key], text)
    }
  }
  let value: unknown
  try {
    // checkKeys bounds what aliases expand to; the library's own count of them is the backstop (50 refused 51 uses).
    value = doc.toJS({ maxAliasCount: MAX_NODES }) ?? {}
  } catch (e) {
    // An alias before its anchor is refused while expanding, not while parsing.
    throw new ConfigError(`invalid YAML: ${e instanceof Error ? e.message : String(e)}`, { path: [] }, name)
  }
  // The validated document (the schema's output) says which values are text: a plain one PyYAML reads otherwise
  // (`prefix: on` is the prefix "True" there, `id_from: [yes]` [True]) would make a Python worker use another ledger
  // or key. A number or boolean key was the schema's to refuse; a `$VAR` is checked as written, not as expanded.
  // agent_id and policy_version were read as PyYAML reads them above. Where the text has a list or a mapping, the
  // validated document has one too (a default has no node, and is not walked).
  const checkText = (v: unknown, node: unknown, path: Path): void => {
    const n = isAlias(node) ? node.resolve(doc) : node
    if (typeof v === "string") {
      if (isScalar(n) && !bothText(n) && !/^transition,(agent_id|policy_version)$/.test(`${path}`))
        throw new ConfigError(noText("value"), at(n.range?.[0], path), name)
    } else if (typeof v === "number" && isScalar(n) && n.type === "PLAIN" && !n.tag) {
      // A plain number must be the one PyYAML reads: `1e3` and `0o17` are text there, `010` is 8.
      const p = pythonValue(n.source as string)
      const x = typeof p === "bigint" || typeof p === "number" ? Number(p) : p
      if (x !== n.value && !Object.is(x, n.value))
        throw new ConfigError(
          `PyYAML (the original's reader) reads this as ${typeof p === "string" ? "text" : p}: write plain decimals`,
          at(n.range?.[0], path),
          name,
        )
    } else if (isCollection(n))
      for (const [k, x] of Object.entries(v as object))
        checkText(x, n.get(k, true), [...path, Array.isArray(v) ? +k : k])
  }
  return {
    value,
    name,
    locate,
    checkText: (v) => checkText(v, doc.contents, []),
    error: (detail, path, key = false) => new ConfigError(detail, locate(path, key), name),
  }
}

/**
 * Whether a scalar is text to both readers, as a name must be: quoted or tagged (read alike, see construct), or plain
 * and taken by no resolver of either (PyYAML's `on` is True, YAML 1.2's `1e3` is 1000).
 */
const bothText = (node: Scalar): unknown =>
  typeof node.value === "string" && (node.type !== "PLAIN" || node.tag || pythonText(node.source as string))

const noText = (what: string) => `PyYAML or YAML 1.2 reads this ${what} as no text: quote it`

const origins = new WeakMap<object, [ConfigSource, Path]>()

/** Notes where a store choice was read (its section's key path), so that a store factory's error can point there. */
export function placeChoice<T extends object>(choice: T, source: ConfigSource | undefined, path: Path): T {
  if (source) origins.set(choice, [source, path])
  return choice
}

/**
 * A ConfigError at the `storage` key of the section a choice was read from: its file, key path, line and column
 * (a factory only sees the choice). A choice built by hand has no place.
 */
export function choiceError(choice: object, detail: string): ConfigError {
  const o = origins.get(choice)
  return o ? o[0].error(detail, [...o[1], "storage"]) : new ConfigError(detail)
}

/**
 * An explicitly tagged scalar becomes what PyYAML's safe_load builds (`!!int 017` is 15, `!!null x` null); a tag it
 * has no constructor for (`!foo`, `!!python/str`) is refused as there, and so are `!` (read as if plain there),
 * `!!binary`, `!!timestamp`, `!!set`, `!!omap` and `!!pairs`, which no key here takes.
 */
function construct(node: Node | null, path: Path, error: Fail): void {
  const tag = node?.tag
  if (!node || !tag) return
  const short = tag.startsWith(TAG) ? tag.slice(TAG.length) : ""
  const offset = node.range?.[0]
  if (isScalar(node) && /^(?:str|int|float|bool|null)$/.test(short)) {
    const v = pythonValue(String(node.source ?? node.value), short)
    if (v === undefined)
      throw error(`PyYAML fails on this value as !!${short}: fix it or drop the tag`, path, offset)
    node.value = typeof v === "bigint" ? Number(v) : v
  } else if (!((short === "map" && isMap(node)) || (short === "seq" && isSeq(node))))
    throw error(
      `tag '${short ? `!!${short}` : tag}' is not supported: use !!str, !!int, !!float, !!bool, !!null or none`,
      path,
      offset,
    )
}

/**
 * Every mapping key is text, appears once in its map, and is not `__proto__`: the document becomes plain objects
 * (toJS, zod), where `__proto__` is no own key (zod drops it, an assignment replaces the prototype), so a section or
 * a tool under it would load as if it were not there, past the unknown-key check. Aliases are not followed: the
 * node they name is checked where it is defined. Tags are read on the way (construct), and so is what aliases expand
 * to: toJS shares an alias's value, but the schema and the guards walk each copy (1,000 aliases of a 100,000-item
 * list took 12 s and 900 MB), so an alias counts the nodes of its anchor, and past MAX_NODES it is refused.
 */
function checkKeys(root: unknown, lines: LineCounter, error: Fail): void {
  const anchors = new Map<string, unknown>()
  // An anchored node's size, negated while its nodes are counted (an alias inside it counts 1, as toJS shares it).
  const sizes = new Map<unknown, number>()
  let nodes = 0
  // Depth first and in the order of the text (a map's own keys before what is under them); [node, null] ends one.
  const stack: [unknown, Path | null][] = [[root, []]]
  // An alias's node: the last anchor of its name before it, as the walk is in the order of the text.
  const real = (node: unknown) => (isAlias(node) ? anchors.get(node.source) : node)
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, path] = item as [Node | null, Path | null]
    if (!path) {
      sizes.set(node, nodes + (sizes.get(node) as number))
      continue
    }
    if (node?.anchor) {
      anchors.set(node.anchor, node)
      sizes.set(node, -nodes)
      stack.push([node, null])
    }
    // Here, with its line (toJS names no place): an alias before its anchor, or inside it (still being counted, its
    // size negated), a cycle that toJS builds and the text checks below then walked until the stack overflowed.
    if (isAlias(node) && !((sizes.get(anchors.get(node.source)) ?? +anchors.has(node.source)) > 0))
      throw error(
        `alias '*${node.source}' before or inside its anchor: write the value out`,
        path,
        node.range?.[0],
      )
    nodes += isAlias(node) ? Math.max(1, sizes.get(anchors.get(node.source)) ?? 1) : 1
    if (nodes > MAX_NODES)
      throw error(
        "aliases expand to over a million values: use fewer aliases of large anchors",
        path,
        node?.range?.[0],
      )
    construct(node, path, error)
    // getIn does not follow an alias: `transition: *t` kept the YAML 1.2 reading of agent_id and policy_version, and
    // under `tools: *t` no name would be checked below.
    const top = path.length === 1 ? path[0] : ""
    if (isAlias(node) && /^(?:transition|tools|tasks)$/.test(`${top}`))
      throw error(`'${top}' may not be an alias: write it out`, path, node.range?.[0])
    // The original's list holds True for `[yes]`, which no function's name equals: a TS and a Python worker would
    // ledger or allow different tools. So the items of a list of names are checked as the names under `tools:` are
    // (below), through aliases too; an item's anchor is noted here, before the walk reaches it, for the items after.
    const list = /^(action_ledger,tools|task_ledger,tasks|registry,allowed)$/.test(`${path}`) && real(node)
    if (isSeq(list))
      for (const [i, item] of list.items.entries()) {
        const name = real(item)
        if (isScalar(name) && !bothText(name)) throw error(noText("name"), [...path, i], name.range?.[0])
        if ((item as Node).anchor) anchors.set((item as Node).anchor as string, item)
      }
    const children: [unknown, Path][] = []
    if (isSeq(node)) for (const [i, child] of node.items.entries()) children.push([child, [...path, i]])
    const seen = new Map<string, number>()
    for (const pair of isMap(node) ? node.items : []) {
      const keyNode = pair.key as Node | null
      // PyYAML merges a plain `<<` (and under `%YAML 1.1` so does the parser here, past the reading of PyYAML's
      // scalars); a quoted one, a key there, is no key here either.
      if (!isScalar(keyNode) || keyNode.source === "<<")
        throw error(
          `a key must be plain text, not a list, mapping, alias or merge key '<<' (write its keys out)`,
          path,
          keyNode?.range?.[0],
        )
      construct(keyNode, path, error)
      if (keyNode.anchor) anchors.set(keyNode.anchor, keyNode)
      // The text toJS makes of the key: `1` and "1", `null` and "" are one key to the objects built from it.
      const key = keyNode.value === null ? "" : String(keyNode.value)
      const offset = keyNode.range?.[0]
      // PyYAML reads `on`, `null` and `1.0` as True, None and 1.0, and YAML 1.2 `1e3` as 1000: such a tool or task
      // would have another name, or none, on one side (the original's lookup by a function's name then misses it, or
      // finds a tool this package does not have). A key `=` is the str "=" to PyYAML too (elsewhere it fails there).
      if ((top === "tools" || top === "tasks") && keyNode.source !== "=" && !bothText(keyNode))
        throw error(noText("name"), [...path, key], offset)
      if (key === "__proto__")
        throw error(
          `unknown key '__proto__' (it names an object's prototype in JavaScript: no section, key, tool or task can be called so)`,
          [...path, key],
          offset,
        )
      if (seen.has(key)) {
        const line = seen.get(key) as number
        throw error(
          `duplicate key '${key}' (first at line ${line}): keep one of them`,
          [...path, key],
          offset,
        )
      }
      seen.set(key, offset === undefined ? 0 : lines.linePos(offset).line)
      children.push([pair.value, [...path, key]])
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as [unknown, Path])
  }
}
