import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ToolBoundaryError } from "../../src/core/tools/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import { boundedNode, realpathResolver } from "../../src/node/paths.ts"

describe("boundedNode: symlink-resolving path scope", () => {
  let dir: string
  beforeAll(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), "mycelium-paths-")))
    await mkdir(join(dir, "workspace/src"), { recursive: true })
    await mkdir(join(dir, "outside"))
    await writeFile(join(dir, "outside/secret.txt"), "s")
    await writeFile(join(dir, "workspace/src/ok.txt"), "ok")
    await symlink(join(dir, "outside"), join(dir, "workspace/src/escape"))
    await symlink(join(dir, "workspace/src/ok.txt"), join(dir, "workspace/src/alias.txt"))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  const tool = () =>
    boundedNode(async (a: { path: string }) => a.path, {
      name: "read_file",
      allowedPaths: [join(dir, "workspace/src")],
    })

  it("refuses a symlink inside the root that points outside it", async () => {
    const e = await tool()({ path: join(dir, "workspace/src/escape/secret.txt") }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(ToolBoundaryError)
    expect((e as ToolBoundaryError).violation).toBe("scope_path")
    expect((e as ToolBoundaryError).llmMessage).toContain(
      `Retry with a path under one of: ${join(dir, "workspace/src")}.`,
    )
  })

  it("allows existing files, in-root symlinks and missing descendants, passing the real path", async () => {
    expect(await tool()({ path: join(dir, "workspace/src/ok.txt") })).toBe(join(dir, "workspace/src/ok.txt"))
    expect(await tool()({ path: join(dir, "workspace/src/alias.txt") })).toBe(
      join(dir, "workspace/src/ok.txt"),
    )
    expect(await tool()({ path: join(dir, "workspace/src/new/dir/file.txt") })).toBe(
      join(dir, "workspace/src/new/dir/file.txt"),
    )
  })

  it("keeps its defaults for an option passed as undefined", async () => {
    const read = async (a: { path: string }) => a.path
    const forwarded = boundedNode(read, {
      name: "read_file",
      allowedPaths: [join(dir, "workspace/src")],
      pathResolver: undefined,
    })
    const e = await forwarded({ path: join(dir, "workspace/src/escape/secret.txt") }).catch((x: unknown) => x)
    expect((e as ToolBoundaryError).violation).toBe("scope_path")
    expect(() =>
      boundedNode(read, { name: "read_file", allowedPaths: ["workspace"], baseDir: undefined }),
    ).not.toThrow()
  })

  it("loadConfig keeps the symlink resolver when paths sets only baseDir", async () => {
    const file = join(dir, "mycelium.yaml")
    await writeFile(file, "tools:\n  read_file:\n    bounded:\n      allowed_paths: [workspace/src]\n")
    const config = await loadConfig(file, { paths: { baseDir: dir } })
    const read = config.apply("read_file", async (a: { path: string }) => a.path)
    const e = await read({ path: join(dir, "workspace/src/escape/secret.txt") }).catch((x: unknown) => x)
    expect((e as ToolBoundaryError).violation).toBe("scope_path")
  })

  it("loadConfig keeps its Node store factories for an option passed as undefined", async () => {
    const file = join(dir, "factories.yaml")
    await writeFile(file, `task_ledger:\n  storage: file\n  path: ${join(dir, "factories-ledger.json")}\n`)
    // A wrapper forwarding its own options passes undefined: that dropped the factory ("needs a store factory").
    const config = await loadConfig(file, {
      storageFactory: undefined,
      taskStoreFactory: undefined,
      stateStoreFactory: undefined,
      receiptStoreFactory: undefined,
      env: undefined,
    })
    const choice = config.resolved.taskLedger
    expect(choice?.kind).toBe("file")
    expect((await config.storage(choice as NonNullable<typeof choice>)).constructor.name).toBe(
      "FileLedgerStorage",
    )
  })

  it("resolves a missing tail under a symlinked parent to the link's target", async () => {
    expect(await realpathResolver(join(dir, "workspace/src/escape/nope/x"))).toBe(join(dir, "outside/nope/x"))
  })
})
