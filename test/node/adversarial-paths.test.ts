// Adversarial review of boundedNode's symlink-aware scope: a dangling link (from an unpacked archive, a cloned
// repository, another tool) is a path that does not exist yet, and writing through it creates the file at its
// target. The check must follow it like the write will.
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ToolBoundaryError } from "../../src/core/tools/index.ts"
import { boundedNode } from "../../src/node/paths.ts"

describe("boundedNode and dangling symlinks", () => {
  let dir: string
  let root: string
  let outside: string
  beforeAll(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), "mycelium-dangling-")))
    root = join(dir, "root")
    outside = join(dir, "outside")
    await mkdir(join(root, "sub"), { recursive: true })
    await mkdir(outside)
    await symlink(join(outside, "created.txt"), join(root, "abs-out"))
    await symlink("../outside/rel.txt", join(root, "rel-out"))
    await symlink(join(root, "sub/new.txt"), join(root, "in"))
    await symlink(join(outside, "missing-dir"), join(root, "dir-out"))
    // A chain: hop1 -> hop2 -> outside, every step dangling at the end.
    await symlink(join(root, "hop2"), join(root, "hop1"))
    await symlink(join(outside, "chained.txt"), join(root, "hop2"))
    await symlink(join(root, "loop-b"), join(root, "loop-a"))
    // `..` after a linked directory: the kernel climbs from the link's target, not from the link.
    await mkdir(join(outside, "deep"))
    await mkdir(join(root, "sub/inner"))
    await symlink(join(outside, "deep"), join(root, "d-out"))
    await symlink("d-out/../dotdot.txt", join(root, "dotdot-out"))
    await symlink("sub/inner", join(root, "d-in"))
    await symlink("d-in/../dotdot.txt", join(root, "dotdot-in"))
    await symlink(join(root, "loop-a"), join(root, "loop-b"))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  const writer = () =>
    boundedNode(
      async (a: { path: string }) => {
        await writeFile(a.path, "written by the tool")
        return a.path
      },
      { name: "write_file", allowedPaths: [root] },
    )

  async function attempt(path: string): Promise<{ ok: string } | { violation: string }> {
    return writer()({ path }).then(
      (ok) => ({ ok }),
      (e: unknown) => {
        expect(e).toBeInstanceOf(ToolBoundaryError)
        return { violation: (e as ToolBoundaryError).violation }
      },
    )
  }

  it.each([
    ["an absolute dangling link to outside", "abs-out", "created.txt"],
    ["a relative dangling link to outside", "rel-out", "rel.txt"],
    ["a chain of links ending outside", "hop1", "chained.txt"],
  ])("refuses %s, and nothing is written there", async (_, name, created) => {
    expect(await attempt(join(root, name))).toEqual({ violation: "scope_path" })
    await expect(readFile(join(outside, created), "utf8")).rejects.toThrow(/ENOENT/)
  })

  it("refuses a missing file under a dangling directory link to outside", async () => {
    expect(await attempt(join(root, "dir-out/x.txt"))).toEqual({ violation: "scope_path" })
  })

  it("refuses a link loop instead of hanging", async () => {
    expect(await attempt(join(root, "loop-a"))).toEqual({ violation: "scope_path" })
    expect(await attempt(join(root, "loop-a/x"))).toEqual({ violation: "scope_path" })
  })

  it("applies a link target's `..` after the linked directory before it, as the kernel does", async () => {
    expect(await attempt(join(root, "dotdot-out"))).toEqual({ violation: "scope_path" })
    await expect(readFile(join(outside, "dotdot.txt"), "utf8")).rejects.toThrow(/ENOENT/)
    expect(await attempt(join(root, "dotdot-in"))).toEqual({ ok: join(root, "sub/dotdot.txt") })
  })

  it("allows a dangling link whose target is inside the root, and passes the target", async () => {
    expect(await attempt(join(root, "in"))).toEqual({ ok: join(root, "sub/new.txt") })
    expect(await readFile(join(root, "sub/new.txt"), "utf8")).toBe("written by the tool")
    expect(await attempt(join(root, "sub/fresh.txt"))).toEqual({ ok: join(root, "sub/fresh.txt") })
  })
})
