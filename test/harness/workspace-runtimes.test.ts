// The harness driving a workspace through its tools, under Node, Deno and Bun (both installed from npm).
import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"

const run = (cmd: string, args: string[]) =>
  JSON.parse(
    execFileSync(cmd, args, { encoding: "utf8", timeout: 60_000 }).trim().split("\n").at(-1) as string,
  )

const expected = (runtime: string) => ({
  runtime,
  output: "built",
  steps: 4,
  pwdEndsWithPkg: true,
  read: "hi\n",
  refused: "error",
})

describe("workspace tools in a plan, per runtime", () => {
  it("Node", () => {
    expect(run(process.execPath, ["--import", "tsx", "test/harness/workspace-script.ts"])).toEqual(
      expected("node"),
    )
  })
  it("Deno", () => {
    expect(run("node_modules/.bin/deno", ["run", "--allow-all", "test/harness/workspace-script.ts"])).toEqual(
      expected("deno"),
    )
  })
  it("Bun", () => {
    expect(run("node_modules/.bin/bun", ["test/harness/workspace-script.ts"])).toEqual(expected("bun"))
  })
})
