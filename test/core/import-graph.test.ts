// No import circles under src/: every file's relative imports, type-only ones included (they tie files together
// for readers and for declaration output too), form a graph without cycles.
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, normalize } from "node:path"
import { describe, expect, it } from "vitest"

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return sourceFiles(p)
    return /\.(ts|mts)$/.test(name) && !name.endsWith(".d.ts") ? [p] : []
  })
}

const IMPORT = /(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g

function importGraph(files: readonly string[], read: (f: string) => string): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const f of files) {
    const deps: string[] = []
    for (const m of read(f).matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2]) as string
      deps.push(normalize(join(dirname(f), spec)).replace(/\.js$/, ".ts"))
    }
    graph.set(f, deps)
  }
  return graph
}

function findCycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 1 | 2>()
  const cycles: string[][] = []
  const visit = (f: string, stack: string[]): void => {
    if (state.get(f) === 2) return
    if (state.get(f) === 1) {
      cycles.push([...stack.slice(stack.indexOf(f)), f])
      return
    }
    state.set(f, 1)
    for (const d of graph.get(f) ?? []) visit(d, [...stack, f])
    state.set(f, 2)
  }
  for (const f of graph.keys()) visit(f, [])
  return cycles
}

describe("import graph of src/", () => {
  it("has no circles", () => {
    const files = sourceFiles("src")
    expect(files.length).toBeGreaterThan(50)
    const graph = importGraph(files, (f) => readFileSync(f, "utf8"))
    // Every relative import resolves to a file in the walk, so a circle cannot hide behind a path mismatch.
    const missing = [...graph.values()].flat().filter((d) => !graph.has(d))
    expect(missing).toEqual([])
    expect(findCycles(graph).map((c) => c.join(" -> "))).toEqual([])
  })

  it("the walk catches a circle made only of type imports", () => {
    const files: Record<string, string> = {
      "src/a.ts": 'import type { B } from "./b.ts"\nexport type A = B',
      "src/b.ts": 'import { c } from "./c.ts"\nexport type B = number',
      "src/c.ts": 'export type { A } from "./a.ts"\nexport const c = 1',
    }
    const graph = importGraph(Object.keys(files), (f) => files[f] as string)
    expect(findCycles(graph)).toEqual([["src/a.ts", "src/b.ts", "src/c.ts", "src/a.ts"]])
  })
})
