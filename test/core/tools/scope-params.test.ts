// bounded()'s scope options come in pairs that name an argument: entityParam with entityPattern, pathParam with
// allowedPaths. Half of a pair, or an argument the schema does not have, was accepted and turned the check off: every
// call then went unchecked, so a typo removed the guard. They are refused when the tool is wrapped.
import { describe, expect, it } from "vitest"
import * as z from "zod"
import { type BoundedOptions, bounded, SchemaBuildError } from "../../../src/core/tools/index.ts"

const body = async (a: object) => a

function refusal(options: Omit<BoundedOptions, "name">): SchemaBuildError {
  try {
    bounded(body, { name: "t", ...options })
  } catch (e) {
    expect(e).toBeInstanceOf(SchemaBuildError)
    expect((e as SchemaBuildError).code).toBe("schema_build")
    return e as SchemaBuildError
  }
  throw new Error("wrapped")
}

const schema = { account: { type: "string" as const }, path: { type: "string" as const, required: false } }

describe("a scope option that would check nothing is refused when the tool is wrapped", () => {
  it("an entity_param the schema does not have (a typo), with the arguments it does have", async () => {
    // Before: wrapped, and { account: "someone_else" } reached the tool unchecked.
    expect(refusal({ schema, entityParam: "acount", entityPattern: "acct_\\d+" }).message).toBe(
      "entity_param 'acount' is not in the schema: pass one of account, path.",
    )
  })

  it("a path argument the schema does not have: path_param named, or the default 'path'", () => {
    const files = { file: { type: "string" as const } }
    expect(refusal({ schema: files, allowedPaths: ["/ws"] }).message).toBe(
      "path_param 'path' is not in the schema: pass one of file.",
    )
    expect(refusal({ schema: files, allowedPaths: ["/ws"], pathParam: "fiel" }).message).toMatch(
      /^path_param 'fiel' is not in the schema/,
    )
  })

  it.each<[string, Omit<BoundedOptions, "name">, string]>([
    ["entityPattern alone", { entityPattern: "acct_\\d+" }, "entity_param and entity_pattern"],
    ["entityParam alone", { entityParam: "account" }, "entity_param and entity_pattern"],
    ["pathParam alone", { pathParam: "path" }, "path_param and allowed_paths"],
  ])("%s, with or without a schema", (_, options, names) => {
    for (const s of [undefined, schema]) {
      expect(refusal({ ...options, ...(s && { schema: s }) }).message).toBe(
        `${names} go together: pass both.`,
      )
    }
  })

  it("a pair that names a field still checks it; without a field spec the arguments are not known", async () => {
    const t = bounded(body, { name: "t", schema, entityParam: "account", entityPattern: "acct_\\d+" })
    await expect(t({ account: "someone_else" })).rejects.toMatchObject({ violation: "scope_entity_pattern" })
    const files = bounded(body, {
      name: "f",
      schema: { file: { type: "string" } },
      allowedPaths: ["/ws"],
      pathParam: "file",
    })
    await expect(files({ file: "/etc/passwd" })).rejects.toMatchObject({ violation: "scope_path" })
    // No schema, or a Standard Schema: the arguments cannot be listed here, so only the pairs are checked.
    expect(() => bounded(body, { name: "t", entityParam: "x", entityPattern: "a" })).not.toThrow()
    expect(() =>
      bounded(body, { name: "t", schema: z.object({ a: z.string() }), allowedPaths: ["/ws"] }),
    ).not.toThrow()
  })
})
