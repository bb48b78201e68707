// A store or guard the file names but that cannot be built here fails after loading, in the factory or when the tool
// is wrapped: the ConfigError still names the file it was loaded from, the key path, line and column (it named
// "mycelium.yaml", with no location, whatever the file was).
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { ConfigError } from "../../src/core/config/index.ts"
import { loadConfig, nodeStorageFactory, nodeTaskStoreFactory } from "../../src/node/config.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-post-load-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const T = "transition:\n  agent_id: a\n  policy_version: v\n"
const quiet = { env: {}, onWarning: () => {} }

function file(name: string, yaml: string): string {
  const path = join(dir, name)
  writeFileSync(path, yaml)
  return path
}

async function refusal(p: Promise<unknown> | (() => unknown)): Promise<ConfigError> {
  try {
    await (typeof p === "function" ? p() : p)
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error("no error")
}

const ledgered = (storage: string) =>
  `${T}action_ledger:\n  storage: ${storage}\n  tools: [t]\ntools:\n  t: {side_effect_class: read}\n`

describe("a store the Node factories cannot build", () => {
  it("indexeddb: a call, and the factory given the loaded choice (as the CLI does), name the file and the key", async () => {
    const path = file("agent-prod.yaml", ledgered("indexeddb\n  database: x"))
    const config = await loadConfig(path, quiet)
    const e = await refusal(config.apply("t", async () => 1)({}, { toolCallId: "c1" }))
    expect(e.message).toMatch(
      /^.*agent-prod\.yaml:5:12 at 'action_ledger\.storage': storage 'indexeddb' is not reachable/,
    )
    expect(e).toMatchObject({ path: ["action_ledger", "storage"], line: 5, column: 12 })
    const choice = config.tools.get("t")?.ledger?.storage
    expect((await refusal(nodeStorageFactory(choice as never))).message).toBe(e.message)
  })

  it("durable_object for the task ledger, receipts and state in a browser's store", async () => {
    const tasks = await loadConfig(
      file("tasks.yaml", "task_ledger:\n  storage: durable_object\n  binding: B\n  tasks: all\n"),
      quiet,
    )
    const choice = tasks.taskConfig("k")?.ledger
    expect(await refusal(nodeTaskStoreFactory(choice as never))).toMatchObject({
      path: ["task_ledger", "storage"],
      line: 2,
      column: 12,
    })
    const receipts = await loadConfig(
      file("receipts.yaml", `${T}audit_receipt:\n  signing_key: k\n  storage: indexeddb\n  database: d\n`),
      quiet,
    )
    const r = await refusal(receipts.receipts())
    expect(r.message).toMatch(/receipts\.yaml:6:12 at 'audit_receipt\.storage'/)
    const state = await loadConfig(
      file("state.yaml", "state_flush:\n  storage: indexeddb\n  database: x\n"),
      quiet,
    )
    expect((await refusal(state.run("r1", async () => 1))).message).toMatch(
      /state\.yaml:2:12 at 'state_flush\.storage'/,
    )
  })
})

describe("a missing optional client package", () => {
  it("'pg' for postgres is named at the storage line of the file", () => {
    // A process where `pg` resolves the way Node answers for a package that is not installed.
    const hook = `export async function resolve(s, c, next) {
      if (s === "pg") throw Object.assign(new Error("Cannot find package 'pg'"), { code: "ERR_MODULE_NOT_FOUND" })
      return next(s, c)
    }`
    const register = `import { register } from "node:module"
      register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)})`
    const path = file("pg.yaml", ledgered("postgres\n  dsn: postgres://h/db"))
    const script = file(
      "pg.mts",
      `import { loadConfig, nodeStorageFactory } from ${JSON.stringify(fileURLToPath(new URL("../../src/node/config.ts", import.meta.url)))}
      const config = await loadConfig(${JSON.stringify(path)}, { env: {} })
      await nodeStorageFactory(config.tools.get("t").ledger.storage).catch((e) => console.log(e.name, e.message))`,
    )
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", "--import", `data:text/javascript,${encodeURIComponent(register)}`, script],
      { encoding: "utf8", timeout: 30_000 },
    )
    expect(r.stdout.trim(), r.stderr).toMatch(
      /^ConfigError .*pg\.yaml:5:12 at 'action_ledger\.storage': storage 'postgres' needs the package 'pg'/,
    )
  })
})

describe("a bounded setting that does not build", () => {
  it("an unknown field type is a ConfigError at the field's line, not a SchemaBuildError without one", async () => {
    const config = await loadConfig(
      file(
        "b.yaml",
        "tools:\n  t:\n    bounded:\n      output_schema:\n        x: {type: string}\n      schema:\n        x: {type: nosuchtype}\n",
      ),
      quiet,
    )
    const e = await refusal(() => config.apply("t", async () => 1))
    expect(e).toMatchObject({ path: ["tools", "t", "bounded", "schema", "x"], line: 7, column: 9 })
    expect(e.message).toMatch(/b\.yaml:7:9 .*unknown type 'nosuchtype'/)
  })

  // Half of a pair, or an argument the schema does not have, turned the check off: every call went unchecked. A key
  // the file lacks is placed at its bounded mapping, the key path naming what to add there.
  it.each([
    [
      "an entity_param the schema does not have",
      "schema:\n        account: {type: string}\n      entity_param: acount\n      entity_pattern: acct_1",
      "entity_param",
      6,
      7,
      "entity_param 'acount' is not in the schema: pass one of account.",
    ],
    [
      "entity_pattern without entity_param",
      "entity_pattern: acct_1",
      "entity_param",
      3,
      5,
      "entity_param and entity_pattern go together: pass both.",
    ],
    [
      "path_param without allowed_paths",
      "path_param: file",
      "path_param",
      4,
      7,
      "path_param and allowed_paths go together: pass both.",
    ],
    [
      "allowed_paths over an argument the schema does not have",
      "schema:\n        file: {type: string}\n      allowed_paths: [/ws]",
      "path_param",
      3,
      5,
      "path_param 'path' is not in the schema: pass one of file.",
    ],
  ])("%s is a ConfigError at its key", async (_, bounded, key, line, column, detail) => {
    const config = await loadConfig(file("s.yaml", `tools:\n  t:\n    bounded:\n      ${bounded}\n`), quiet)
    const e = await refusal(() => config.apply("t", async () => 1))
    expect(e).toMatchObject({ path: ["tools", "t", "bounded", key], line, column, detail })
  })

  // The option names were matched at the start of any message: a schema field named like one (entity_parent) was
  // placed at a bounded key the file does not have.
  it.each(["entity_parent", "entity_pattern", "path_params", "allowed_paths_x"])(
    "a schema field named %s is placed at its line in the schema",
    async (field) => {
      const yaml = `tools:\n  t:\n    bounded:\n      schema:\n        ${field}: {type: nosuchtype}\n`
      const config = await loadConfig(file("f.yaml", yaml), quiet)
      const e = await refusal(() => config.apply("t", async () => 1))
      expect(e).toMatchObject({ path: ["tools", "t", "bounded", "schema", field], line: 5, column: 9 })
    },
  )

  it("a pattern that does not compile is placed at entity_pattern", async () => {
    const config = await loadConfig(
      file("p.yaml", 'tools:\n  t:\n    bounded:\n      entity_param: id\n      entity_pattern: "(["\n'),
      quiet,
    )
    expect(await refusal(() => config.apply("t", async () => 1))).toMatchObject({
      path: ["tools", "t", "bounded", "entity_pattern"],
      line: 5,
    })
  })
})
