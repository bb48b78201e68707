// The same example script under Deno and Bun (both installed from npm): the core runs unchanged there.
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const run = (bin: string, args: string[]) =>
  JSON.parse(
    execFileSync(`node_modules/.bin/${bin}`, args, { encoding: "utf8", timeout: 60_000 })
      .trim()
      .split("\n")
      .at(-1) as string,
  )

describe("runtimes", () => {
  it("Deno: ten redispatches, one charge", () => {
    expect(run("deno", ["run", "examples/quickstart.ts"])).toEqual({
      runtime: "deno",
      charges: 1,
      ids: ["pi_1"],
    })
  })
  it("Bun: ten redispatches, one charge", () => {
    expect(run("bun", ["examples/quickstart.ts"])).toEqual({ runtime: "bun", charges: 1, ids: ["pi_1"] })
  })

  it("Deno example: a restarted process replays the completed call from the file instead of charging again", () => {
    const dir = mkdtempSync(join(tmpdir(), "mycelium-deno-example-"))
    try {
      // The permissions the example documents, and no more: a missing one fails the run.
      const args = [
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-sys=hostname",
        "examples/deno.ts",
        join(dir, "l.json"),
      ]
      const first = run("deno", args)
      const second = run("deno", args)
      expect(first).toMatchObject({ runtime: "deno", charges: 1 })
      expect(second).toEqual({ runtime: "deno", charges: 0, id: first.id })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
  it("Bun example: Bun.serve, five concurrent redispatches, one charge; a bad body is a 400", () => {
    expect(run("bun", ["examples/bun.ts"])).toEqual({
      runtime: "bun",
      charges: 1,
      ids: ["pi_1"],
      badStatus: 400,
    })
  })

  // One call per session (each has its own cache), the second lookup in a session hits its cache.
  const als = (runtime: string) => ({
    runtime,
    hasAsyncContext: true,
    calls: 2,
    sameSessionEverywhere: [true, true],
    outside: true,
  })
  it("Deno: sessions propagate across await through node:async_hooks", () => {
    expect(run("deno", ["run", "test/runtimes/session-als-script.ts"])).toEqual(als("deno"))
  })
  it("Bun: sessions propagate across await through node:async_hooks", () => {
    expect(run("bun", ["test/runtimes/session-als-script.ts"])).toEqual(als("bun"))
  })
})
