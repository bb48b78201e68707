// Adversarial review of bounded()'s scope checks: the model writes the arguments, so every value here is one
// it could send (JSON.parse output), plus the getter case an integration's own argument objects can carry.
import { describe, expect, it } from "vitest"
import { bounded, SchemaBuildError } from "../../../src/core/tools/index.ts"
import { outcome } from "./outcome.ts"

describe("entity scope: only one string or number id reaches the tool", () => {
  const seen: unknown[] = []
  const acct = bounded(
    async (a: { account: unknown }) => {
      seen.push(a.account)
      return a.account
    },
    { name: "acct", entityParam: "account", entityPattern: "acct_\\d+" },
  )
  // A permissive pattern (anything without a slash) is a common way to say "one path segment".
  const segment = bounded(async (a: { id: unknown }) => a.id, {
    name: "doc",
    entityParam: "id",
    entityPattern: "[^/]+",
  })

  it.each([
    ["an array whose String() matches", ["acct_1"]],
    ["a nested array", [["acct_1"]]],
    ["two ids joined by String()", ["acct_1", "acct_2"]],
  ])("refuses %s", async (_, account) => {
    seen.length = 0
    expect(await outcome(acct({ account }))).toEqual({ violation: "scope_entity_pattern" })
    expect(seen).toEqual([])
  })

  it.each([
    ["a query operator object", JSON.parse('{"$ne": null}')],
    ["a boolean", true],
    ["an array", ["a", "b"]],
  ])("refuses %s under a permissive pattern", async (_, id) => {
    expect(await outcome(segment({ id }))).toEqual({ violation: "scope_entity_pattern" })
  })

  it("keeps strings and finite numbers, and still anchors the pattern", async () => {
    const numeric = bounded(async (a: { n: unknown }) => a.n, {
      name: "n",
      entityParam: "n",
      entityPattern: "\\d+",
    })
    expect(await outcome(numeric({ n: 123 }))).toEqual({ ok: 123 })
    expect(await outcome(numeric({ n: "123" }))).toEqual({ ok: "123" })
    expect(await outcome(numeric({ n: Number.NaN }))).toEqual({ violation: "scope_entity_pattern" })
    expect(await outcome(numeric({ n: 1.5 }))).toEqual({ violation: "scope_entity_pattern" })
    // JSON's 1e999 parses to Infinity, and "Infinity" and "NaN" spell ids to a letters-and-digits pattern.
    const word = bounded(async (a: { n: unknown }) => a.n, {
      name: "w",
      entityParam: "n",
      entityPattern: "[A-Za-z0-9]+",
    })
    for (const n of [JSON.parse("1e999"), Number.NaN]) {
      expect(await outcome(word({ n }))).toEqual({ violation: "scope_entity_pattern" })
    }
    expect(await outcome(acct({ account: "acct_1\n" }))).toEqual({ violation: "scope_entity_pattern" })
    expect(await outcome(acct({ account: " acct_1" }))).toEqual({ violation: "scope_entity_pattern" })
    expect(await outcome(acct({ account: "ACCT_1" }))).toEqual({ violation: "scope_entity_pattern" })
    expect(await outcome(acct({ account: "acct_1/../acct_2" }))).toEqual({
      violation: "scope_entity_pattern",
    })
    // An alternation cannot escape the anchors: the pattern is wrapped in ^(?:...)$.
    const alt = bounded(async (a: { k: unknown }) => a.k, {
      name: "k",
      entityParam: "k",
      entityPattern: "a|b",
    })
    expect(await outcome(alt({ k: "ab" }))).toEqual({ violation: "scope_entity_pattern" })
    expect(await outcome(alt({ k: "xa" }))).toEqual({ violation: "scope_entity_pattern" })
  })

  it("a pattern that only compiles once wrapped (unbalanced parentheses) is refused, not read as ^(?:a)|(b)$", () => {
    // Python's re.fullmatch refuses "a)|(b" too; wrapped, it would take any id starting with "a".
    expect(() =>
      bounded(async (a: { k: unknown }) => a.k, { name: "k", entityParam: "k", entityPattern: "a)|(b" }),
    ).toThrow(SchemaBuildError)
  })

  it("the tool receives the value that was checked, even from a getter that changes its answer", async () => {
    let reads = 0
    const args = {
      get account() {
        reads++
        return reads === 1 ? "acct_1" : "acct_1; DROP TABLE accounts"
      },
    }
    seen.length = 0
    expect(await outcome(acct(args as { account: unknown }))).toEqual({ ok: "acct_1" })
    expect(seen).toEqual(["acct_1"])
  })

  it("__proto__ and constructor as ids are plain strings to the pattern", async () => {
    const word = bounded(async (a: { w: unknown }) => a.w, {
      name: "w",
      entityParam: "w",
      entityPattern: "[a-z_]+",
    })
    expect(await outcome(word(JSON.parse('{"w": "__proto__"}')))).toEqual({ ok: "__proto__" })
    expect(await outcome(word(JSON.parse('{"w": {"__proto__": "x"}}')))).toEqual({
      violation: "scope_entity_pattern",
    })
  })
})

describe("scope checks need an arguments object", () => {
  const ran: unknown[] = []
  const path = bounded(
    async (a: unknown) => {
      ran.push(a)
      return a
    },
    { name: "read", allowedPaths: ["/data"] },
  )
  const entity = bounded(
    async (a: unknown) => {
      ran.push(a)
      return a
    },
    { name: "get", entityParam: "id", entityPattern: "c\\d+" },
  )

  it.each<[string, unknown]>([
    ["null", null],
    ["nothing", undefined],
    ["a string", "/etc/passwd"],
    ["a number", 5],
    ["an array", ["/etc/passwd"]],
  ])("%s as the arguments is bind_failed, never a TypeError or an unchecked call", async (_, args) => {
    ran.length = 0
    for (const tool of [path, entity]) {
      expect(await outcome(tool(args as object))).toEqual({ violation: "bind_failed" })
    }
    expect(ran).toEqual([])
  })
})

describe("path scope: lexical containment holds against the model's path tricks", () => {
  const read = bounded(async (a: { path: unknown }) => a.path, { name: "read", allowedPaths: ["/data"] })

  it.each([
    "/data-secret/x",
    "/data/../data-secret/x",
    "/data/./a/../../etc/passwd",
    "/data/a/b/../../../etc",
    "/data\\..\\etc",
    "/data/a\\..\\..\\etc",
    "/DATA/x",
    "C:/data/x",
    "//etc/passwd",
    "/data/x\n/../../etc",
    "/data/\0/x",
    " /data/x",
    "",
    "data/x",
    "./data/x",
  ])("refuses %j", async (path) => {
    expect(await outcome(read({ path }))).toEqual({ violation: "scope_path" })
  })

  it.each<[unknown, string]>([
    [["/data/a"], "an array"],
    [{ toString: "/data/a" }, "an object"],
    [7, "a number"],
    [true, "a boolean"],
  ])("refuses %j (%s) where a path string is expected", async (path) => {
    expect(await outcome(read({ path }))).toEqual({ violation: "scope_path" })
  })

  // Under /data lexically, but a URL parser reads %2e%2e as ".." and Windows drops trailing dots and spaces:
  // a tool that builds a URL from the path, or runs on Windows, would climb out.
  it.each([
    "/data/%2e%2e/etc/passwd",
    "/data/%2E%2E/etc",
    "/data/.%2e/etc",
    "/data/%2e./etc",
    "/data/%252e%252e/etc",
    "/data/.. /etc",
    "/data/x/..",
    "/data/... /x",
    "/data/x/. . /y",
    // Encoded separators: decoded once, "..%2f.." is "../..", which nothing collapsed here.
    "/data/..%2f..%2fetc%2fpasswd",
    "/data/%2e%2e%2f%2e%2e%2fetc",
    "/data/%2e%2e%5c%2e%2e%5cetc",
    "/data/..%5Cetc",
    "/data/x%2f..%2f..%2fetc",
    "/data/..%252f..%252fetc",
  ])("refuses the disguised dot segment in %j", async (path) => {
    const outcomeOf = await outcome(read({ path }))
    // "/data/x/.." is plain ".." and normalizes to /data, which is allowed: it is the control.
    expect(outcomeOf).toEqual(path === "/data/x/.." ? { ok: "/data" } : { violation: "scope_path" })
  })

  // A URL parser ends the path at "?" or "#", drops tabs and newlines, and strips C0 controls and spaces from the
  // ends of its input: "..?x" is ".." and a query, "..%3fx" once decoded, and "/data/x/..\x01" is "/data/".
  // A tool that builds a URL from "/data/..?/etc" would fetch "/etc".
  it.each([
    "/data/..?/etc",
    "/data/..#/etc",
    "/data/x/..\x01",
    "/data/x/..\x1f",
    "/data/x/..\b ",
    "/data/x/..%01",
    "/data/..%3fx/etc",
    "/data/..%23x/etc",
    "/data/%2e%2e%3F/etc",
    "/data/..%253f/etc",
    "/data/\uFF0E\uFF0E\uFF1F/etc",
    "/data/\t../etc",
    "/data/.\n./etc",
    "/data/%0a%2e%2e/etc",
  ])("refuses %j, a dot segment to a URL parser", async (path) => {
    expect(await outcome(read({ path }))).toEqual({ violation: "scope_path" })
  })

  it("keeps names that merely contain dots", async () => {
    for (const name of [
      // A URL parser reads these as ".", which stays where it is: ".#x" is an Emacs lock file.
      ".#main.c",
      "src/.#x",
      ".?",
      ".?x",
      "a/ ./b",
      "a/.\x01",
      "a?b",
      "a#b",
      "..a?x",
      ".a#x",
      ".hidden",
      "a..b",
      "..a",
      "a.",
      "v1.2.3",
      "%2ea",
      "a%2fb",
      "..a%2fb",
      "x%5c.hidden",
    ]) {
      expect(await outcome(read({ path: `/data/${name}` }))).toEqual({ ok: `/data/${name}` })
    }
  })

  it("a relative baseDir roots nothing: relative roots do not build and relative paths are refused", async () => {
    const tool = async (a: { path: unknown }) => a.path
    expect(() => bounded(tool, { name: "r", allowedPaths: ["src"], baseDir: "srv" })).toThrow(
      SchemaBuildError,
    )
    const rel = bounded(tool, { name: "r", allowedPaths: ["/srv"], baseDir: "srv" })
    expect(await outcome(rel({ path: "x" }))).toEqual({ violation: "scope_path" })
    expect(await outcome(rel({ path: "/srv/x" }))).toEqual({ ok: "/srv/x" })
  })

  it("passes the normalized path, so the tool never sees the segments that were checked away", async () => {
    // Not a leading "//": Windows reads it as a share on another host (guard-bypasses.test.ts).
    expect(await outcome(read({ path: "/data//a/./b/../c" }))).toEqual({ ok: "/data/a/c" })
    expect(await outcome(read({ path: "/data/a\\b" }))).toEqual({ ok: "/data/a/b" })
  })

  it("a path read through a getter is checked and passed once", async () => {
    let reads = 0
    const args = {
      get path() {
        reads++
        return reads === 1 ? "/data/a" : "/etc/passwd"
      },
    }
    expect(await outcome(read(args))).toEqual({ ok: "/data/a" })
  })

  it("an inherited path is checked like an own one", async () => {
    expect(await outcome(read(Object.create({ path: "/etc/passwd" }) as { path: unknown }))).toEqual({
      violation: "scope_path",
    })
  })
})
