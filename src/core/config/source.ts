import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml"
import { ConfigError, type ConfigLocation } from "./errors.ts"
import { pythonYamlStr } from "./python-yaml.ts"

type Path = ConfigLocation["path"]

// Its methods spell out the path type: `Path` is local, and a consumer could not name it.
/** A parsed YAML document that can say where any key path sits in the text (what `expandEnv` reports against). */
export interface ConfigSource {
  readonly value: unknown
  readonly name: string
  locate(path: ConfigLocation["path"], key?: boolean): ConfigLocation
  error(detail: string, path: ConfigLocation["path"], key?: boolean): ConfigError
}

/** Parses YAML (1.2 core schema, no custom tags); a syntax error names its line and column. */
export function parseConfigSource(text: string, name = "mycelium.yaml"): ConfigSource {
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true })
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
    const node = doc.getIn(["transition", key], true)
    if (isScalar(node) && node.type === "PLAIN" && typeof node.source === "string")
      node.value = pythonYamlStr(node.source)
  }
  let value: unknown
  try {
    value = doc.toJS({ maxAliasCount: 50 }) ?? {}
  } catch (e) {
    // An alias bomb (aliases of aliases) is refused while expanding, not while parsing.
    throw new ConfigError(`invalid YAML: ${e instanceof Error ? e.message : String(e)}`, { path: [] }, name)
  }
  return {
    value,
    name,
    locate,
    error: (detail, path, key = false) => new ConfigError(detail, locate(path, key), name),
  }
}
