import { MyceliumError } from "../errors.ts"

/** Where a config problem is: the key path inside the document and, when the text is known, line and column. */
export interface ConfigLocation {
  /** Key path from the root, e.g. `["tools", "send_payment", "side_effect_class"]`. */
  readonly path: readonly (string | number)[]
  /** 1-based line and column of the offending key (or value) in the YAML text, when known. */
  readonly line?: number
  readonly column?: number
}

/**
 * A `mycelium.yaml` problem: unknown or misspelt keys, wrong types, missing environment variables, sections this
 * package does not implement, production-profile violations. The message names the key path, line and column.
 */
export class ConfigError extends MyceliumError {
  override readonly name: string = "ConfigError"
  override readonly code: string = "config_invalid"
  readonly path: readonly (string | number)[]
  readonly line: number | undefined
  readonly column: number | undefined
  /** The problem without its location prefix. */
  readonly detail: string

  constructor(detail: string, location: ConfigLocation = { path: [] }, source = "mycelium.yaml") {
    const where = location.line !== undefined ? `${source}:${location.line}:${location.column ?? 1}` : source
    const path = location.path ?? []
    const key = path.length ? ` at '${formatPath(path)}'` : ""
    super(`${where}${key}: ${detail}`)
    this.path = path
    this.line = location.line
    this.column = location.column
    this.detail = detail
  }
}

/** `tools.send_payment.bounded.allowed_paths[0]` */
export function formatPath(path: readonly (string | number)[]): string {
  let out = ""
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${p}` : p
  return out
}

/** `MyceliumConfig.close()` ran: the config opens no store any more (one would hold a connection nobody closes). */
export class ConfigClosedError extends MyceliumError {
  override readonly name: string = "ConfigClosedError"
  override readonly code: string = "config_closed"
}
