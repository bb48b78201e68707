// docs/integrations.md promises complete examples: every ```ts block there must type-check against the package
// (its `mycelium-runtime/...` imports mapped to the sources) and the real framework packages.
import { execFileSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const doc = readFileSync("docs/integrations.md", "utf8")
const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string)

const toSource = (code: string) =>
  code
    .replace(/"mycelium-runtime\/integrations\/([a-z-]+)"/g, '"../../src/integrations/$1.ts"')
    .replace(/"mycelium-runtime"/g, '"../../src/index.ts"')

describe("docs/integrations.md", () => {
  it("has one complete example per integration, and every code block type-checks", () => {
    for (const entry of ["ai-sdk", "langgraph", "openai-agents"]) {
      expect(
        blocks.some((b) => b.includes(`mycelium-runtime/integrations/${entry}"`)),
        entry,
      ).toBe(true)
    }
    const dir = `test/.docs-check-${process.pid}`
    mkdirSync(dir, { recursive: true })
    try {
      for (const [i, b] of blocks.entries()) writeFileSync(`${dir}/block${i}.ts`, toSource(b))
      writeFileSync(
        `${dir}/tsconfig.json`,
        JSON.stringify({ extends: "../../tsconfig.json", include: ["./*.ts"] }),
      )
      let output = ""
      try {
        execFileSync("npx", ["tsc", "-p", `${dir}/tsconfig.json`, "--noEmit"], {
          encoding: "utf8",
          stdio: "pipe",
        })
      } catch (e) {
        output = String((e as { stdout?: string }).stdout ?? e)
      }
      expect(output).toBe("")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
