import { describe, expect, it, vi } from "vitest"
import * as z from "zod"
import { bounded, SchemaBuildError, ToolBoundaryError } from "../../../src/core/tools/index.ts"

const FETCH = { customer_id: { type: "string" as const, required: true, pattern: "^c\\d+$" } }

async function boundaryError(p: Promise<unknown>): Promise<ToolBoundaryError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(ToolBoundaryError)
  return e as ToolBoundaryError
}

describe("bounded() with the YAML field spec", () => {
  const body = vi.fn(async (a: { customer_id: unknown }) => ({ customer_id: a.customer_id, name: "Ada" }))
  const fetchCustomer = bounded(body, { name: "fetch_customer", schema: FETCH })

  it("passes valid args through", async () => {
    expect(await fetchCustomer({ customer_id: "c1" })).toEqual({ customer_id: "c1", name: "Ada" })
  })

  it("missing_required_field", async () => {
    body.mockClear()
    const e = await boundaryError(fetchCustomer({} as { customer_id: string }))
    expect(e.violation).toBe("missing_required_field")
    expect(e.field).toBe("customer_id")
    expect(e.stage).toBe("input")
    expect(e.message).toBe("fetch_customer: missing_required_field on customer_id")
    expect(e.llmMessage).toBe(
      "Tool 'fetch_customer' failed input validation. Field: customer_id. Received: nothing. " +
        "Expected: a value for this field. Provide customer_id when calling fetch_customer.",
    )
    expect(body).not.toHaveBeenCalled()
  })

  it("type_mismatch on null, with the original's exact llm_message", async () => {
    const e = await boundaryError(
      bounded(async (_: object) => 1, { name: "f", schema: FETCH })({ customer_id: null }),
    )
    expect(e.violation).toBe("type_mismatch")
    expect(e.llmMessage).toBe(
      "Tool 'f' failed input validation. Field: customer_id. Received: null. Expected: string. Provide customer_id as a string.",
    )
  })

  it("pattern_mismatch; the pattern is an unanchored search like the original", async () => {
    const loose = bounded(async (a: { id: string }) => a.id, {
      name: "g",
      schema: { id: { pattern: "c\\d+" } },
    })
    expect(await loose({ id: "xc1" })).toBe("xc1")
    expect(await loose({ id: "c1x" })).toBe("c1x")
    const e = await boundaryError(fetchCustomer({ customer_id: "x1" }))
    expect(e.violation).toBe("pattern_mismatch")
    expect(e.actual).toBe("x1")
    expect(e.expected).toBe("string matching pattern '^c\\d+$'")
    expect(e.llmMessage).toBe(
      "Tool 'fetch_customer' failed input validation. Field: customer_id. Received: 'x1'. " +
        "Expected: string matching pattern '^c\\d+$'. Provide customer_id in the required format.",
    )
  })

  it("unexpected_kwarg", async () => {
    const e = await boundaryError(fetchCustomer({ customer_id: "c1", extra: 1 } as { customer_id: string }))
    expect(e.violation).toBe("unexpected_kwarg")
    expect(e.field).toBe("extra")
    expect(e.expected).toBe("one of [customer_id]")
    expect(e.llmMessage).toContain("Expected: one of [customer_id].")
    expect(e.llmMessage).toContain("Remove extra; fetch_customer accepts only: customer_id.")
  })

  it("bind_failed when the arguments are not an object", async () => {
    const e = await boundaryError(fetchCustomer(["c1"] as unknown as { customer_id: string }))
    expect(e.violation).toBe("bind_failed")
    expect(e.llmMessage).toBe(
      "Tool 'fetch_customer' failed input validation. Received: ['c1']. Expected: an object of named fields. " +
        "Pass the arguments of fetch_customer as an object.",
    )
  })

  it("other failures keep the pydantic type name and coerce like lax mode", async () => {
    const seen = vi.fn(async (a: object) => a)
    const tool = bounded(seen, {
      name: "t",
      schema: {
        n: { type: "integer" },
        x: { type: "number", required: false },
        ok: { type: "boolean", required: false },
        tags: { type: "array", items: { type: "string" }, min_length: 1, required: false },
        meta: { type: "object", required: false },
        s: { type: "string", min_length: 2, max_length: 3, required: false },
      },
    })
    expect(await tool({ n: "5", x: "1.5", ok: "yes" })).toEqual({ n: 5, x: 1.5, ok: true })
    const cases: [object, string, string][] = [
      [{ n: "five" }, "int_parsing", "n"],
      [{ n: 1.5 }, "int_from_float", "n"],
      [{ n: 1, ok: "maybe" }, "bool_parsing", "ok"],
      [{ n: 1, x: "abc" }, "float_parsing", "x"],
      [{ n: 1, tags: "a" }, "list_type", "tags"],
      [{ n: 1, tags: [] }, "too_short", "tags"],
      [{ n: 1, tags: ["a", 2] }, "type_mismatch", "tags.1"],
      [{ n: 1, meta: [1] }, "dict_type", "meta"],
      [{ n: 1, s: "a" }, "string_too_short", "s"],
      [{ n: 1, s: 42 }, "type_mismatch", "s"],
    ]
    for (const [args, violation, field] of cases) {
      const e = await boundaryError(tool(args))
      expect([e.violation, e.field]).toEqual([violation, field])
      expect(e.llmMessage).toMatch(
        new RegExp(`^Tool 't' failed input validation\\. Field: ${field.replace(".", "\\.")}\\.`),
      )
    }
    const e = await boundaryError(tool({ n: "five" }))
    expect(e.llmMessage).toBe(
      "Tool 't' failed input validation. Field: n. Received: 'five'. Expected: integer. Fix the value of n and call t again.",
    )
  })

  it("output_validation_failed for every output failure, with a hint the model can act on", async () => {
    const bad = bounded(async (_: { customer_id: string }) => ({ customer_id: "c1" }) as unknown, {
      name: "fetch_customer",
      schema: FETCH,
      outputSchema: { customer_id: { type: "string" }, name: { type: "string" } },
    })
    const e = await boundaryError(bad({ customer_id: "c1" }))
    expect(e.violation).toBe("output_validation_failed")
    expect(e.stage).toBe("output")
    expect(e.field).toBe("name")
    expect(e.llmMessage).toBe(
      "Tool 'fetch_customer' returned invalid output. Field: name. Received: nothing. Expected: a value for this field. " +
        "This is a fault in fetch_customer's result, not in your arguments; call fetch_customer again or use another tool.",
    )
    const notObject = bounded(async (_: object) => "oops" as unknown, {
      name: "h",
      outputSchema: { a: { type: "string" } },
    })
    const e2 = await boundaryError(notObject({}))
    expect(e2.violation).toBe("output_validation_failed")
    expect(e2.llmMessage).toContain("Tool 'h' returned invalid output. Received: 'oops'.")
  })

  it("rejects malformed specs when wrapping", () => {
    const f = async (_: object) => 1
    expect(() => bounded(f, { name: "f", schema: {} })).toThrow(SchemaBuildError)
    expect(() => bounded(f, { name: "f", schema: { a: { type: "date" as "string" } } })).toThrow(
      /unknown type 'date'/,
    )
    expect(() => bounded(f, { name: "f", schema: { a: { type: "array" } } })).toThrow(/items/)
    expect(() => bounded(f, { name: "f", schema: { a: { type: "integer", pattern: "x" } } })).toThrow(
      /pattern/,
    )
    expect(() => bounded(f, { name: "f", schema: { a: { pattern: "(" } } })).toThrow(SchemaBuildError)
    // `false` promises a closed object that nothing enforces; the original refuses any non-mapping here.
    expect(() =>
      bounded(f, { name: "f", schema: { a: { type: "object", additional_properties: false } } }),
    ).toThrow(/additional_properties must be a field spec mapping/)
    expect(() =>
      bounded(f, { name: "f", schema: { a: { type: "object", additional_properties: true } } }),
    ).not.toThrow()
    expect(() => bounded(f, { name: "f", allowedPaths: ["relative/dir"] })).toThrow(/absolute/)
    // One string (a YAML scalar) was a bare TypeError from .map().
    expect(() => bounded(f, { name: "f", allowedPaths: "/ws" as unknown as string[] })).toThrow(
      new SchemaBuildError("allowed_paths must be a list."),
    )
    // "" (falsy) built a tool with no path check, and [5] was a bare TypeError.
    for (const allowedPaths of ["", null, 0, [5], [null]]) {
      expect(() => bounded(f, { name: "f", allowedPaths: allowedPaths as unknown as string[] })).toThrow(
        SchemaBuildError,
      )
    }
    // An entry String() cannot print was a bare TypeError; a nested list was called "not absolute".
    const unprintable = {
      toString: () => {
        throw new Error("x")
      },
    }
    for (const entry of [Object.create(null), unprintable, ["/ws"]]) {
      expect(() => bounded(f, { name: "f", allowedPaths: [entry] as unknown as string[] })).toThrow(
        new SchemaBuildError("allowed_paths entries must be strings."),
      )
    }
  })
})

describe("bounded() with Standard Schema (zod 4)", () => {
  const input = z.object({ customer_id: z.string().regex(/^c\d+$/), limit: z.number().default(10) })
  const output = z.object({ name: z.string() })
  const tool = bounded(async (a: { customer_id: string; limit?: number }) => ({ name: `n${a.limit}` }), {
    name: "zod_tool",
    schema: input,
    outputSchema: output,
  })

  it("passes the parsed value (defaults applied) to the tool", async () => {
    expect(await tool({ customer_id: "c1" })).toEqual({ name: "n10" })
  })

  it("maps zod issues to the same violation names", async () => {
    const missing = await boundaryError(tool({} as { customer_id: string }))
    expect(missing.violation).toBe("missing_required_field")
    expect(missing.llmMessage).toContain("Provide customer_id when calling zod_tool.")
    const type = await boundaryError(tool({ customer_id: 5 as unknown as string }))
    expect(type.violation).toBe("type_mismatch")
    expect(type.llmMessage).toContain("Received: 5. Expected: string. Provide customer_id as a string.")
    const pattern = await boundaryError(tool({ customer_id: "x1" }))
    expect(pattern.violation).toBe("pattern_mismatch")
    expect(pattern.llmMessage).toContain("Provide customer_id in the required format.")
  })

  it("output failures are output_validation_failed", async () => {
    const bad = bounded(async (_: object) => ({ name: 3 }), { name: "zo", outputSchema: output })
    const e = await boundaryError(bad({}))
    expect(e.violation).toBe("output_validation_failed")
    expect(e.field).toBe("name")
    expect(e.llmMessage).toMatch(/^Tool 'zo' returned invalid output\. Field: name\. Received: 3\./)
  })

  it("accepts any Standard Schema implementation", async () => {
    const even = {
      "~standard": {
        version: 1 as const,
        vendor: "test",
        validate: async (v: unknown) =>
          typeof v === "object" && v !== null && (v as { n: number }).n % 2 === 0
            ? { value: v }
            : { issues: [{ message: "n must be even", path: ["n"] }] },
      },
    }
    const t = bounded(async (a: { n: number }) => a.n, { name: "even", schema: even })
    expect(await t({ n: 2 })).toBe(2)
    const e = await boundaryError(t({ n: 3 }))
    expect(e.violation).toBe("invalid_value")
    expect(e.llmMessage).toBe(
      "Tool 'even' failed input validation. Field: n. Received: 3. Expected: n must be even. Fix the value of n and call even again.",
    )
  })
})

describe("bounded(): pydantic's pattern dialect", () => {
  const passes = async (p: Promise<unknown>) =>
    p.then(
      () => "passed",
      (e: unknown) => (e instanceof ToolBoundaryError ? e.violation : `untyped ${String(e)}`),
    )
  const named = (pattern: string) =>
    bounded(async (a: { name: string }) => a.name, {
      name: "set_name",
      schema: { name: { type: "string", pattern } },
    })

  // Without the `u` flag JavaScript read \A and \z as the letters: it took the first value and refused the second.
  it("reads \\A, \\z and \\Z as anchors outside a class", async () => {
    for (const p of ["\\A[a-z]+\\z", "\\A[a-z]+\\Z"]) {
      expect(await passes(named(p)({ name: "x; rm -rf / Aabcz" }))).toBe("pattern_mismatch")
      expect(await passes(named(p)({ name: "abc" }))).toBe("passed")
    }
    // An escaped bracket opens no class; \z after a class is an anchor again.
    expect(await passes(named("\\A\\[[a\\]]+\\z")({ name: "[a]" }))).toBe("passed")
    expect(await passes(named("\\A\\[[a\\]]+\\z")({ name: "[a]x" }))).toBe("pattern_mismatch")
    const t = bounded(async (a: { id: string }) => a.id, {
      name: "acct",
      entityParam: "id",
      entityPattern: "\\Aacct_\\d+\\z",
    })
    expect(await passes(t({ id: "acct_1" }))).toBe("passed")
    expect(await passes(t({ id: "Aacct_1z" }))).toBe("scope_entity_pattern")
  })

  it("refuses an escaped letter JavaScript would read as itself, when the tool is built", () => {
    const f = async (_: object) => 1
    for (const p of ["\\q", "a\\e", "\\p{L}", "[\\A]", "[\\B]", "[a-\\z]"]) {
      expect(() => named(p), p).toThrow(SchemaBuildError)
      expect(() => bounded(f, { name: "f", entityParam: "id", entityPattern: p }), p).toThrow(
        SchemaBuildError,
      )
    }
    // Escapes JavaScript knows, \\ and escaped punctuation stay as they were (no `u` flag: [\w\-] compiles).
    for (const p of ["[\\w\\-]+", "\\bc\\d\\B\\s\\S\\W\\D\\t\\n\\x41\\u0041\\cJ", "\\\\q", "[\\b\\]]"])
      expect(() => named(p), p).not.toThrow()
  })
})

describe("bounded() scope checks", () => {
  it("scope_entity_pattern requires a full match", async () => {
    const t = bounded(async (a: { account: string }) => a.account, {
      name: "acct",
      entityParam: "account",
      entityPattern: "acct_\\d+",
    })
    expect(await t({ account: "acct_12" })).toBe("acct_12")
    const e = await boundaryError(t({ account: "xacct_12" }))
    expect(e.violation).toBe("scope_entity_pattern")
    expect(e.stage).toBe("scope")
    expect(e.llmMessage).toBe(
      "Tool 'acct' failed scope validation. Field: account. Received: 'xacct_12'. Expected: pattern 'acct_\\d+'. " +
        "Provide account in the required format.",
    )
  })

  const read = bounded(async (a: { path: string }) => a.path, {
    name: "read_file",
    allowedPaths: ["/workspace/src/"],
  })

  it("allows paths under a root and passes the normalized path", async () => {
    expect(await read({ path: "/workspace/src" })).toBe("/workspace/src")
    expect(await read({ path: "/workspace/src/a/./b//c.ts" })).toBe("/workspace/src/a/b/c.ts")
    expect(await read({ path: "/workspace/src/a/../b.ts" })).toBe("/workspace/src/b.ts")
  })

  it.each([
    ["/workspace/src2/x.ts"],
    ["/workspace/src/../secrets"],
    ["/workspace/src/../../etc/passwd"],
    ["/workspace/src\\..\\..\\etc\\passwd"],
    ["src/a.ts"],
    ["/workspace/src/\0x"],
  ])("scope_path blocks %j", async (path) => {
    const e = await boundaryError(read({ path }))
    expect(e.violation).toBe("scope_path")
    expect(e.llmMessage).toMatch(
      /^Tool 'read_file' failed scope validation\. Field: path\. Received: '.+'\. Expected: path under \/workspace\/src\/\. Retry with a path under one of: \/workspace\/src\/\.$/s,
    )
  })

  it("resolves relative paths against baseDir, and fails closed when the resolver throws", async () => {
    const rel = bounded(async (a: { file: string }) => a.file, {
      name: "rel",
      allowedPaths: ["src"],
      baseDir: "/workspace",
      pathParam: "file",
    })
    expect(await rel({ file: "src/x.ts" })).toBe("/workspace/src/x.ts")
    const e = await boundaryError(rel({ file: "../x.ts" }))
    expect(e.violation).toBe("scope_path")
    const broken = bounded(async (a: { path: string }) => a.path, {
      name: "broken",
      allowedPaths: ["/w"],
      pathResolver: async () => {
        throw new Error("ELOOP")
      },
    })
    const e2 = await boundaryError(broken({ path: "/w/x" }))
    expect(e2.violation).toBe("scope_path")
    expect(e2.llmMessage).toContain("Retry with a path under one of: /w.")
  })

  it("a non-string path is blocked", async () => {
    const e = await boundaryError(read({ path: 42 as unknown as string }))
    expect(e.violation).toBe("scope_path")
    expect(e.llmMessage).toContain("Received: 42.")
  })
})
