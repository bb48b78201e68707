// Every TypeScript block in docs/harness.md compiles against the real sources (package imports mapped to src/).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const root = resolve(".")
const entries: Array<[string, string]> = [
  ["mycelium-runtime/harness/workspace", "src/harness/workspace/index.ts"],
  ["mycelium-runtime/harness", "src/harness/index.ts"],
  ["mycelium-runtime/adapters/file", "src/adapters/file.ts"],
  ["mycelium-runtime", "src/index.ts"],
]

describe("docs/harness.md", () => {
  it("every ts code block type-checks", () => {
    const md = readFileSync("docs/harness.md", "utf8")
    const blocks = [...md.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string)
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    const dir = mkdtempSync(join(tmpdir(), "harness-doc-"))
    try {
      const files = blocks.map((code, i) => {
        let src = code
        for (const [spec, path] of entries)
          src = src.replaceAll(`"${spec}"`, JSON.stringify(join(root, path)))
        const f = join(dir, `block${i}.ts`)
        writeFileSync(f, `${src}\nexport {}\n`)
        return f
      })
      const program = ts.createProgram(files, {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        types: ["node"],
        typeRoots: [join(root, "node_modules/@types")],
      })
      const diags = ts
        .getPreEmitDiagnostics(program)
        .filter((d) => d.file?.fileName.startsWith(dir))
        .map(
          (d) =>
            `${d.file?.fileName.split("/").pop()}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
        )
      expect(diags).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
