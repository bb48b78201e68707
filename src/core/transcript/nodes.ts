import { isRecord } from "./clone.ts"
import type { Decomposed, FormatAdapter, Part } from "./formats/adapter.ts"

export interface Node extends Decomposed {
  /** Index in the transcript being analysed. */
  index: number
}

// Calls only count in assistant messages; elsewhere the provider treats them as opaque content, and so do
// we. A result outside the carrier role is kept as a result marked `misplaced`, so it is reported and
// moved to its call instead of being mistaken for content (unless the format allows it there).
export function toNodes(messages: readonly unknown[], adapter: FormatAdapter): Node[] {
  const decomposed = messages.map((m) => (isRecord(m) ? adapter.decompose(m) : undefined))
  const providerCalls = new Set<string>()
  for (const d of decomposed) {
    if (d?.role !== "assistant") continue
    for (const p of d.parts) if (p.providerCallId) providerCalls.add(p.providerCallId)
  }
  return decomposed.map((d, index) => {
    if (!d) return { index, role: "", shell: {}, parts: [{ kind: "other", raw: messages[index] }] }
    const parts = d.parts.map((p): Part => {
      if (p.kind === "call" && d.role !== "assistant") return { kind: "other", raw: p.raw }
      if (p.kind !== "result" || d.role === adapter.carrierRole) return p
      if (p.allowedForProviderCall && p.id && providerCalls.has(p.id)) return { kind: "other", raw: p.raw }
      return { ...p, misplaced: true }
    })
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

/**
 * For each message, the assistant whose block it sits in, if it is a carrier message there. One pass: walking
 * back from every result over a run of parallel results was quadratic in the width of the run.
 */
export function blockOwners(nodes: readonly Node[], adapter: FormatAdapter): (number | undefined)[] {
  const owners: (number | undefined)[] = []
  let lastNonCarrier = -1
  for (let j = 0; j < nodes.length; j++) {
    // "single": only the message right before; otherwise the last one before the run of carrier messages.
    const k = adapter.blockShape === "single" ? j - 1 : lastNonCarrier
    owners.push(k >= 0 && hasCalls(nodes[k]) ? k : undefined)
    if (nodes[j]?.role !== adapter.carrierRole) lastNonCarrier = j
  }
  return owners
}
