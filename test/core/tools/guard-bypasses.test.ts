// Second adversarial review of bounded(), the registry and the field spec: each case got past a guard, or was
// refused where the original accepts it.
import { describe, expect, it } from "vitest"
import {
  bounded,
  SchemaBuildError,
  ToolBoundaryError,
  ToolRegistry,
  ToolRunner,
} from "../../../src/core/tools/index.ts"
import { outcome } from "./outcome.ts"

describe("an own __proto__ key cannot carry a scoped argument past its check", () => {
  // A common tool body: the model's arguments merged into defaults. Object.assign sets an own "__proto__" as the
  // prototype, so the unchecked nested value is read as the argument.
  const account = bounded(
    async (a: { account_id?: string }) =>
      (Object.assign({ limit: 10 }, a) as { account_id?: string }).account_id,
    { name: "read_account", entityParam: "account_id", entityPattern: "acct_[0-9]+" },
  )
  const file = bounded(
    async (a: { path?: string }) => (Object.assign({ encoding: "utf8" }, a) as { path?: string }).path,
    { name: "read_file", allowedPaths: ["/workspace/src"] },
  )

  it("refuses it as scope_proto_key, for the entity and the path check", async () => {
    expect(await outcome(account(JSON.parse('{"__proto__": {"account_id": "root"}}')))).toEqual({
      violation: "scope_proto_key",
    })
    expect(await outcome(file(JSON.parse('{"__proto__": {"path": "/etc/shadow"}}')))).toEqual({
      violation: "scope_proto_key",
    })
    // Next to a valid argument too: the tool would still inherit every other key from it.
    expect(
      await outcome(file(JSON.parse('{"path": "/workspace/src/a", "__proto__": {"mode": "w"}}'))),
    ).toEqual({ violation: "scope_proto_key" })
  })

  it("tells the model what to drop, at the scope stage the runner feeds back", async () => {
    const e = await file(JSON.parse('{"__proto__": {"path": "/etc/shadow"}}')).catch((x: unknown) => x)
    expect(e).toMatchObject({ stage: "scope", field: "__proto__" })
    expect((e as ToolBoundaryError).llmMessage).toContain("Remove __proto__")
  })

  it("keeps arguments without one", async () => {
    expect(await outcome(account({ account_id: "acct_1" }))).toEqual({ ok: "acct_1" })
    expect(await outcome(file(JSON.parse('{"path": "/workspace/src/a"}')))).toEqual({
      ok: "/workspace/src/a",
    })
  })
})

describe("dot segments hidden by another decoding are refused", () => {
  const read = bounded(async (a: { path: unknown }) => a.path, { name: "read", allowedPaths: ["/data"] })

  it.each([
    "/data/%2e%2e%20/%2e%2e%20/etc/passwd", // decoded once: ".. ", which Windows opens as ".."
    "/data/..%20/etc",
    "/data/..%2520/etc", // decoded twice
    "/data/%25%32%65%25%32%65/x", // "%2e%2e" after one decoding, ".." after two
    "/data/%2e%2e%2f%ff/x", // one bad escape must not hide the "../" beside it
    "/data/\uFF0E\uFF0E/\uFF0E\uFF0E/etc/passwd", // fullwidth full stops: ".." under NFKC
    "/data/\u2024\u2024/x", // one-dot leaders
    "/data/\u2025/x", // two-dot leader
    "/data/..\uFF0Fetc", // fullwidth solidus: "../etc" under NFKC
    "/data/%EF%BC%8E%EF%BC%8E/x", // fullwidth full stops, URL-encoded
    "/data/..%00/x",
    "/data/..%00.png/x", // a C API reads up to the decoded NUL: ".."
    "/data/%2e%2e%00.txt/x",
    "/data/\uFF05\uFF12\uFF45\uFF05\uFF12\uFF45/x", // fullwidth "%2e%2e": NFKC, then one decoding
    "/data/..::$INDEX_ALLOCATION/etc", // an NTFS stream name: Windows opens the directory ".."
    "/data/..:$I30:$INDEX_ALLOCATION/etc",
    // A servlet container (Tomcat, Jetty, Spring) strips a ";" path parameter from each segment: "..;" is "..".
    "/data/..;/etc",
    "/data/..;jsessionid=x/etc",
    "/data/%2e%2e;/etc",
    "/data/..%3b/etc",
  ])("refuses %j", async (path) => {
    expect(await outcome(read({ path }))).toEqual({ violation: "scope_path" })
  })

  it("keeps names that decode to something other than a dot segment", async () => {
    for (const name of [
      "%2ea",
      "a%2fb",
      "%zz..",
      "a:b",
      ".a:b",
      "v1.2%20final",
      "\uFF0Ea",
      "caf%C3%A9",
      "%",
      "%e2%80",
      ".;x",
      "a;b",
      "..a;b",
    ]) {
      expect(await outcome(read({ path: `/data/${name}` }))).toEqual({ ok: `/data/${name}` })
    }
  })
})

describe("Windows device names and namespaces are refused: they open no file under the root", () => {
  const read = bounded(async (a: { path: unknown }) => a.path, { name: "read", allowedPaths: ["/data"] })
  const anywhere = bounded(async (a: { path: unknown }) => a.path, { name: "any", allowedPaths: ["/"] })

  it.each([
    "/data/NUL", // the null device, in any folder
    "/data/nul.txt", // with any extension
    "/data/sub/PRN.tar.gz",
    "/data/Aux",
    "/data/COM1",
    "/data/lpt9.log",
    "/data/CON .", // trailing spaces and dots are dropped
    "/data/con  .txt",
    "/data/nul:", // a stream of the device
    "/data/CONIN$",
    "/data/conout$.x",
    "/data/COM\u00B9", // a superscript one: Windows reads it as a digit
    "/data/%4eUL", // one URL decoding
    "/data/x%2fNUL",
    "/data\\NUL", // a backslash is a separator
    "/data/NUL/x",
    "\\\\.\\data\\x", // \\.\data\x: the device namespace, not C:\data
    "\\\\?\\data\\x",
    "//data/x", // a UNC share on the host "data"
    "\\\\data\\x",
    "/\\data/x",
  ])("refuses %j", async (path) => {
    expect(await outcome(read({ path }))).toEqual({ violation: "scope_path" })
  })

  it("refuses the NT prefix \\??\\ and a share even under the root /", async () => {
    // NFKC folds a fullwidth solidus or reverse solidus into one, as it folds "．．" (U+FF0F, U+FF3C).
    for (const path of [
      "\\??\\C:\\x",
      "/??/C:/x",
      "//host/share/x",
      "\\\\.\\pipe\\x",
      "/\uFF0Fhost/x",
      "/\uFF3Chost\uFF3Cx",
    ])
      expect(await outcome(anywhere({ path })), path).toEqual({ violation: "scope_path" })
  })

  it("refuses such a root when the tool is built", () => {
    for (const root of ["//host/share", "\\\\.\\pipe", "/data/NUL", "/\uFF0Fhost/share"])
      expect(() => bounded(async () => 1, { name: "r", allowedPaths: [root] }), root).toThrow(
        SchemaBuildError,
      )
  })

  it("keeps names that only start or end like one", async () => {
    for (const name of [
      "console.log",
      "nullable",
      "COM10",
      "LPT0",
      "auxiliary.c",
      "CONOUT",
      "a.nul",
      "nul-report",
      "my NUL",
      "??",
      "x/?",
    ]) {
      expect(await outcome(read({ path: `/data/${name}` })), name).toEqual({ ok: `/data/${name}` })
    }
  })
})

describe("a tool registered under another name runs under that name", () => {
  const fetchCustomer = bounded(async ({ customer_id }: { customer_id: string }) => ({ customer_id }), {
    name: "fetch_customer",
    schema: { customer_id: { type: "string", pattern: "^c\\d+$" } },
  })

  it("runner.call() and runWithLlmRetry() allow it, and its own name stays refused", async () => {
    const registry = new ToolRegistry()
    registry.register(fetchCustomer, "get_customer")
    const runner = new ToolRunner({ registry, maxLlmRetries: 1 })
    expect(await runner.call(fetchCustomer, { customer_id: "c1" })).toEqual({ customer_id: "c1" })
    const tool = registry.get("get_customer")
    if (!tool) throw new Error("get_customer is registered")
    const r = await runner.runWithLlmRetry(tool, {
      messages: [],
      toolCallId: "call_1",
      args: { customer_id: "c1" },
      invokeLlm: (m) => m,
      parseToolCall: () => ({ name: "get_customer", args: { customer_id: "c1" } }),
    })
    expect(r.result).toEqual({ customer_id: "c1" })
    expect(() => registry.validateCall("fetch_customer")).toThrow(ToolBoundaryError)
    // Another function with the same toolName was not registered: it is not allowed through the alias.
    const impostor = bounded(async (a: { customer_id: string }) => a, { name: "fetch_customer" })
    expect(await outcome(runner.call(impostor, { customer_id: "c1" }))).toEqual({
      violation: "not_in_allowlist",
    })
  })

  it("a model's retry naming the tool's own name is refused as not_in_allowlist: the alias is the app's", async () => {
    const registry = new ToolRegistry()
    registry.register(fetchCustomer, "get_customer")
    const runner = new ToolRunner({ registry, maxLlmRetries: 2 })
    const picks = [
      { name: "fetch_customer", args: { customer_id: "c1" } },
      { name: "get_customer", args: { customer_id: "c2" } },
    ]
    const r = await runner.runWithLlmRetry(fetchCustomer, {
      messages: [] as { content?: string }[],
      toolCallId: "call_1",
      args: { customer_id: "x" },
      invokeLlm: (m) => m,
      parseToolCall: () => picks.shift() ?? null,
    })
    expect(r).toMatchObject({ result: { customer_id: "c2" }, toolName: "get_customer" })
    expect(r.messages[1]?.content).toMatch(/^Tool 'fetch_customer' is not available/)
  })

  it("a tool allowed by name but never registered still takes the model's corrected call", async () => {
    const runner = new ToolRunner({ registry: new ToolRegistry({ allowed: ["fetch_customer"] }) })
    const r = await runner.runWithLlmRetry(fetchCustomer, {
      messages: [],
      toolCallId: "call_1",
      args: { customer_id: "x" },
      invokeLlm: (m) => m,
      parseToolCall: () => ({ name: "fetch_customer", args: { customer_id: "c1" } }),
    })
    expect(r.result).toEqual({ customer_id: "c1" })
  })
})

describe("field spec", () => {
  it("min_length and max_length count code points, as pydantic does", async () => {
    const t = bounded(async (a: { code: string; tag?: string }) => a, {
      name: "t",
      schema: {
        code: { type: "string", min_length: 2 },
        tag: { type: "string", max_length: 1, required: false },
      },
    })
    expect(await outcome(t({ code: "😀" }))).toEqual({ violation: "string_too_short" })
    expect(await outcome(t({ code: "ab", tag: "😀" }))).toEqual({ ok: { code: "ab", tag: "😀" } })
    expect(await outcome(t({ code: "😀😀" }))).toEqual({ ok: { code: "😀😀" } })
    expect(await outcome(t({ code: "ab", tag: "😀a" }))).toEqual({ violation: "string_too_long" })
    // A lone surrogate is one code point to Python too.
    expect(await outcome(t({ code: "\uD800\uD800" }))).toEqual({ ok: { code: "\uD800\uD800" } })
  })

  it("a field named like an Object member that was left out is missing, not the inherited member", async () => {
    const t3 = bounded(async (a: object) => a, {
      name: "t3",
      schema: { toString: { type: "string" as const, required: false }, q: { type: "string" } },
    })
    expect(await outcome(t3({ q: "x" }))).toEqual({ ok: { q: "x" } })
    const t4 = bounded(async (a: object) => a, {
      name: "t4",
      schema: { constructor: { type: "object" as const } },
    })
    expect(await outcome(t4({}))).toEqual({ violation: "missing_required_field" })
    expect(await outcome(t4(JSON.parse('{"constructor": {"a": 1}}')))).toEqual({
      ok: { constructor: { a: 1 } },
    })
  })
})
