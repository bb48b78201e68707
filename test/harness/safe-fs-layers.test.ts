// The workspace's two path defences, each shown alone: the '..' refusal (before any filesystem access), and the
// real-path containment that catches a directory swapped for a symlink after its lstat (a background job the agent
// started can do that while a write walks the path).
import { existsSync, mkdirSync, rmdirSync, rmSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it, vi } from "vitest"
import { FileWriteAction } from "../../src/harness/workspace/index.ts"
import { afterTest, observed, startedWorkspace } from "./started-workspace.ts"

const hook: { afterLstat: ((path: string) => void) | null } = { afterLstat: null }

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>()
  const lstat = async (...args: Parameters<typeof real.lstat>) => {
    const st = await real.lstat(...args)
    hook.afterLstat?.(String(args[0]))
    return st
  }
  return { ...real, default: { ...real, lstat }, lstat }
})

describe("workspace path defences, each alone", () => {
  it("a '..' path that would resolve inside the root is still refused, and creates nothing", async () => {
    const w = await startedWorkspace()
    const o = observed(await w.act(FileWriteAction({ path: "a/../x", content: "x" })), "error")
    expect(o.message).toContain("'..'")
    expect([existsSync(join(w.root, "a")), existsSync(join(w.root, "x"))]).toEqual([false, false])
  })

  it("a parent swapped for a symlink to a sibling whose name extends the root's is refused", async () => {
    const w = await startedWorkspace()
    const sibling = `${w.root}2`
    mkdirSync(sibling)
    afterTest(() => rmSync(sibling, { recursive: true, force: true }))
    mkdirSync(join(w.root, "d"))
    hook.afterLstat = (path) => {
      if (path !== join(w.root, "d")) return
      hook.afterLstat = null
      rmdirSync(path)
      symlinkSync(sibling, path)
    }
    afterTest(() => {
      hook.afterLstat = null
    })
    const o = observed(await w.act(FileWriteAction({ path: "d/pwned", content: "x" })), "error")
    expect(o.message).toContain("outside the workspace")
    expect(existsSync(join(sibling, "pwned"))).toBe(false)
  })
})
