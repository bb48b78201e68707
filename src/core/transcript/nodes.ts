import { isRecord } from "./clone.ts"
import type { Decomposed, FormatAdapter } from "./formats/adapter.ts"

export interface Node extends Decomposed {
  /** Index in the transcript being analysed. */
  index: number
}

// Calls only count in assistant messages and results only in the format's carrier role; elsewhere the
// provider treats them as opaque content, and so do we.
export function toNodes(messages: readonly unknown[], adapter: FormatAdapter): Node[] {
  return messages.map((m, index) => {
    if (!isRecord(m)) return { index, role: "", shell: {}, parts: [{ kind: "other", raw: m }] }
    const d = adapter.decompose(m)
    const parts = d.parts.map((p) =>
      (p.kind === "call" && d.role !== "assistant") || (p.kind === "result" && d.role !== adapter.carrierRole)
        ? { kind: "other" as const, raw: p.raw }
        : p,
    )
    return { ...d, parts, index }
  })
}

export const hasCalls = (n: Node | undefined): boolean => n?.parts.some((p) => p.kind === "call") ?? false

/** Indices of the carrier messages that must answer assistant `i`'s calls. */
export function blockOf(nodes: readonly Node[], i: number, adapter: FormatAdapter): number[] {
  const out: number[] = []
  for (let j = i + 1; j < nodes.length && nodes[j]?.role === adapter.carrierRole; j++) {
    out.push(j)
    if (adapter.blockShape === "single") break
  }
  return out
}

/** The assistant whose block carrier message `j` sits in, if any. */
export function ownerOf(nodes: readonly Node[], j: number, adapter: FormatAdapter): number | undefined {
  let k = j - 1
  if (adapter.blockShape !== "single") while (k >= 0 && nodes[k]?.role === adapter.carrierRole) k--
  return k >= 0 && hasCalls(nodes[k]) ? k : undefined
}
