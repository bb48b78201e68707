// bounded.allowed_paths from a mycelium.yaml that loadConfig reads from disk. The original resolves the roots and the
// called path with Path.resolve() (working directory, symlinks); the expectations below are its answers, obtained by
// running its config.apply_tool("read_file", ...) on the same layout (tests/test_tool_boundary.py has them for
// @bounded: test_scope_gate_blocks_directory_symlink_escape, test_scope_gate_allows_relative_root_and_candidate).
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ToolBoundaryError } from "../../src/core/tools/index.ts"
import { loadConfig } from "../../src/node/config.ts"

describe("loadConfig: bounded.allowed_paths resolves like the original", () => {
  let dir: string
  beforeAll(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), "mycelium-cfg-paths-")))
    await mkdir(join(dir, "allowed"))
    await mkdir(join(dir, "outside"))
    await writeFile(join(dir, "outside/secret.txt"), "secret")
    await writeFile(join(dir, "allowed/ok.txt"), "safe")
    await symlink(join(dir, "outside"), join(dir, "allowed/escape"))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  async function readTool(
    root: string,
  ): Promise<{ call: (path: string) => Promise<unknown>; seen: string[] }> {
    const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`)
    await writeFile(
      file,
      `tools:\n  read_file:\n    bounded:\n      schema:\n        path: {type: string, required: true}\n` +
        `      allowed_paths: [${JSON.stringify(root)}]\n`,
    )
    const config = await loadConfig(file, { onWarning: () => {} })
    const seen: string[] = []
    const tool = config.apply("read_file", async (a: { path: string }) => {
      seen.push(a.path)
      return "read"
    })
    return { call: (path) => tool({ path }).catch((e: unknown) => e), seen }
  }

  it("refuses a symlink inside the root that leads outside it (the tool never runs)", async () => {
    const { call, seen } = await readTool(join(dir, "allowed"))
    for (const path of [join(dir, "allowed/escape/secret.txt"), join(dir, "allowed/escape/new.txt")]) {
      const e = await call(path)
      expect(e).toBeInstanceOf(ToolBoundaryError)
      expect((e as ToolBoundaryError).violation).toBe("scope_path")
    }
    expect(seen).toHaveLength(0)
    expect(await call(join(dir, "allowed/ok.txt"))).toBe("read")
    expect(seen).toEqual([join(dir, "allowed/ok.txt")])
  })

  it("reads a relative root and a relative path against the working directory", async () => {
    const rel = relative(process.cwd(), join(dir, "allowed"))
    const { call, seen } = await readTool(rel)
    expect(await call(join(rel, "ok.txt"))).toBe("read")
    expect(((await call(join(rel, "escape/secret.txt"))) as ToolBoundaryError).violation).toBe("scope_path")
    expect(seen).toEqual([join(dir, "allowed/ok.txt")])
  })
})
