// LLM-facing messages render values the way the Python original did (repr), so prompts tuned against the
// original keep working: strings in single quotes, None as null, True/False, dicts as {'k': v}.
export function pyRepr(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return "null"
  if (typeof value === "string") return quote(value)
  if (typeof value === "boolean") return value ? "True" : "False"
  if (typeof value === "number" || typeof value === "bigint") return String(value)
  if (depth > 4) return "..."
  if (Array.isArray(value)) return `[${value.map((v) => pyRepr(v, depth + 1)).join(", ")}]`
  if (typeof value === "object") {
    const parts = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => `${quote(k)}: ${pyRepr(v, depth + 1)}`,
    )
    return `{${parts.join(", ")}}`
  }
  return String(value)
}

function quote(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'"
  const body = s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t")
  return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q
}
