// The same example script under Deno and Bun (both installed from npm): the core runs unchanged there.
import { execFileSync } from "node:child_process"
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
