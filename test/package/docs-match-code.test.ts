// Docs pages that restate the code (an entry's exports, a source tree, stores' option names) stay in step with it:
// each drifted once, unnoticed, because nothing compared them.
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const read = (path: string) => readFileSync(path, "utf8")

/** The names an entry re-exports (`export { a, type B } from`, `export type { C } from`). */
function exportedNames(source: string): string[] {
  return [...source.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) =>
    (m[1] as string)
      .split(",")
      .map((n) => n.trim().replace(/^type\s+/, ""))
      .filter(Boolean),
  )
}

/** Every file under `dir`, relative to the repository root. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? filesUnder(join(dir, d.name)) : [join(dir, d.name)],
  )
}

/** The paths the "The tree" block of docs/ledger-internals.md lists, rebuilt from its indentation. */
function treePaths(markdown: string): Set<string> {
  const block = /## The tree\n+```\n([\s\S]*?)\n```/.exec(markdown)?.[1] ?? ""
  const stack: string[] = []
  const out = new Set<string>()
  for (const line of block.split("\n")) {
    const m = /^( *)(\S+\/|\S+\.ts)(?:\s|$)/.exec(line)
    if (!m) continue
    const depth = (m[1] as string).length / 2
    stack.length = depth
    stack.push(m[2] as string)
    out.add(stack.join(""))
  }
  return out
}

describe("docs that restate the code", () => {
  it("docs/adapter-kit.md's table names every export of the adapter-kit entry", () => {
    const table = read("docs/adapter-kit.md")
      .split("\n")
      .filter((l) => l.startsWith("|"))
      .join("\n")
    const names = exportedNames(read("src/adapter-kit.ts"))
    expect(names.length).toBeGreaterThan(40)
    expect(names.filter((n) => !table.includes(`\`${n}\``))).toEqual([])
  })

  it("docs/ledger-internals.md's tree lists every file of src/core/ledger and src/core/storage", () => {
    const listed = treePaths(read("docs/ledger-internals.md"))
    const files = [...filesUnder("src/core/ledger"), ...filesUnder("src/core/storage")]
    expect(files.length).toBeGreaterThan(30)
    expect(files.filter((f) => !listed.has(f))).toEqual([])
  })

  it("docs/adapter-kit.md names each built-in networked store's deadline option, and Upstash's client signal", () => {
    const page = (
      /A store that talks to a server[\s\S]*?\n\n/.exec(read("docs/adapter-kit.md"))?.[0] ?? ""
    ).replace(/\s+/g, " ")
    const options: [string, string][] = [
      ["src/adapters/redis.ts", "timeoutMs"],
      ["src/adapters/http.ts", "requestTimeout"],
      ["src/edge/client.ts", "requestTimeout"],
      ["src/adapters/neon-kit.ts", "timeout"],
    ]
    for (const [file, option] of options) {
      expect(read(file), file).toMatch(new RegExp(`readonly ${option}\\?:`))
      expect(page, option).toContain(`\`${option}\``)
    }
    expect(page).not.toContain("the built-in ones take a `timeout`")
    expect(page).toContain("signal: () => AbortSignal.timeout(")
  })
})
