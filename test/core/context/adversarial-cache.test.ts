// Adversarial review of protect()'s cache keys: the model writes the entity ids and the arguments the keys are
// built from. Two different requests must never share an entry, and one session never sees another's.
import { describe, expect, it } from "vitest"
import { protect, Session } from "../../../src/core/context/index.ts"

// A tool whose answer names exactly what it was asked, so a shared entry shows up as a wrong answer.
function echoTool<A extends object>(options: { entityParam?: keyof A & string; name: string }) {
  const calls: unknown[] = []
  const tool = protect(async (a: A) => {
    calls.push(a)
    return JSON.stringify(a, (_, v) => (v instanceof Map || v instanceof Set ? [...v] : v))
  }, options)
  return { tool, calls }
}

describe("protect() keys: different requests get different entries", () => {
  it("two dates are two requests (a Date has no own keys and every date keyed as {})", async () => {
    const { tool, calls } = echoTool<{ since: Date }>({ name: "report" })
    const call = new Session().bind(tool)
    const a = await call({ since: new Date("2020-01-01T00:00:00Z") })
    const b = await call({ since: new Date("2026-01-01T00:00:00Z") })
    expect(a).toContain("2020-01-01")
    expect(b).toContain("2026-01-01")
    expect(calls).toHaveLength(2)
    expect(await call({ since: new Date("2020-01-01T00:00:00Z") })).toBe(a)
    expect(calls).toHaveLength(2)
  })

  it("Maps and Sets with different contents are different requests, in any insertion order the same", async () => {
    const { tool } = echoTool<{ f: unknown }>({ name: "filter" })
    const keys = [
      tool.cacheKey({ f: new Map([["a", 1]]) }),
      tool.cacheKey({ f: new Map([["a", 2]]) }),
      tool.cacheKey({ f: new Map() }),
      tool.cacheKey({ f: new Set(["x"]) }),
      tool.cacheKey({ f: new Set() }),
      tool.cacheKey({ f: {} }),
    ]
    expect(new Set(keys).size).toBe(keys.length)
    expect(
      tool.cacheKey({
        f: new Map([
          ["a", 1],
          ["b", 2],
        ]),
      }),
    ).toBe(
      tool.cacheKey({
        f: new Map([
          ["b", 2],
          ["a", 1],
        ]),
      }),
    )
  })

  it("an array or object entity does not share an entry with the string that spells it", async () => {
    const { tool, calls } = echoTool<{ id: unknown }>({ name: "get", entityParam: "id" })
    const call = new Session().bind(tool)
    const asArray = await call({ id: ["a"] })
    const asString = await call({ id: '["a"]' })
    expect(asArray).toBe('{"id":["a"]}')
    expect(asString).toBe('{"id":"[\\"a\\"]"}')
    expect(calls).toHaveLength(2)
    expect(tool.cacheKey({ id: { a: 1 } })).not.toBe(tool.cacheKey({ id: '{"a":1}' }))
    // Documented: an id keeps its string form, so "42" and 42 are one entity.
    expect(tool.cacheKey({ id: 42 })).toBe(tool.cacheKey({ id: "42" }))
  })

  it("ids carrying the key's own separators and quotes stay distinct, from each other and from argument keys", () => {
    const { tool } = echoTool<{ id: unknown }>({ name: "get", entityParam: "id" })
    const ids = [
      'a","entity","b',
      'a"]',
      "a\u0000b",
      "a\\",
      "a",
      "__proto__",
      "constructor",
      "args",
      '{"id":"a"}',
    ]
    const keys = ids.map((id) => tool.cacheKey({ id }))
    keys.push(
      tool.cacheKey({ id: null }),
      tool.cacheKey({ id: undefined }),
      tool.cacheKey({} as { id: unknown }),
    )
    // null, undefined and a missing id all fall back to keying by every argument; those three may share.
    expect(new Set(keys.slice(0, ids.length)).size).toBe(ids.length)
    for (const k of keys.slice(ids.length)) expect(keys.slice(0, ids.length)).not.toContain(k)
  })

  it("arguments nested 50,000 deep are keyed (the recursive key overflowed the stack with a RangeError)", async () => {
    const deep = () => JSON.parse(`{"q": ${"[".repeat(50_000)}1${"]".repeat(50_000)}}`) as { q: unknown }
    let calls = 0
    const tool = protect(
      async (_: { q: unknown }) => {
        calls++
        return "ok"
      },
      { name: "deep" },
    )
    const call = new Session().bind(tool)
    expect(await call(deep())).toBe("ok")
    expect(await call(deep())).toBe("ok")
    expect(calls).toBe(1)
    const other = JSON.parse(`{"q": ${"[".repeat(50_000)}2${"]".repeat(50_000)}}`) as { q: unknown }
    expect(tool.cacheKey(other)).not.toBe(tool.cacheKey(deep()))
  })

  it("prototype-named ids are cached and isolated per session like any other", async () => {
    const { tool, calls } = echoTool<{ id: string }>({ name: "get", entityParam: "id" })
    const s1 = new Session().bind(tool)
    const s2 = new Session().bind(tool)
    for (const id of ["__proto__", "constructor", "hasOwnProperty"]) {
      expect(await s1({ id })).toBe(JSON.stringify({ id }))
      expect(await s1({ id })).toBe(JSON.stringify({ id }))
    }
    expect(calls).toHaveLength(3)
    await s2({ id: "__proto__" })
    expect(calls).toHaveLength(4)
  })
})

describe("protect(): arguments that cannot be keyed, and a change made while a read is in flight", () => {
  it("a cycle in the arguments is refused with invalid_option (it hung, growing memory without bound)", async () => {
    let calls = 0
    const tool = protect(async (_a: { id: string; ctx: Record<string, unknown> }) => ++calls, {
      name: "lookup",
    })
    const ctx: Record<string, unknown> = { page: 1 }
    ctx.self = ctx
    const viaMap: Record<string, unknown> = {}
    viaMap.m = new Map([["back", viaMap]])
    for (const args of [
      { id: "a", ctx },
      { id: "a", ctx: { list: [viaMap] } },
    ]) {
      expect(() => tool.cacheKey(args)).toThrow(expect.objectContaining({ code: "invalid_option" }))
      await expect(new Session().run(() => tool(args))).rejects.toMatchObject({ code: "invalid_option" })
    }
    expect(calls).toBe(0)
    // Through toJSON: each call makes a fresh wrapper holding the object again (JSON.stringify overflows its stack).
    const node: { id: number; toJSON?: () => unknown } = { id: 1 }
    node.toJSON = function (this: { id: number }) {
      return { id: this.id, parent: this }
    }
    await expect(new Session().run(() => tool({ id: "a", ctx: { node } }))).rejects.toMatchObject({
      code: "invalid_option",
    })
    // The same object twice side by side is no cycle.
    const shared = { x: 1 }
    expect(tool.cacheKey({ id: "a", ctx: { a: shared, b: shared, c: [shared, shared] } })).toContain(
      '{\\"x\\":1}',
    )
  })

  it("invalidate() during a read: later reads do not join it or get its value, which may predate the change", async () => {
    let db = "old"
    let calls = 0
    let release!: () => void
    const held = new Promise<void>((r) => {
      release = r
    })
    const tool = protect(
      async ({ id }: { id: string }) => {
        calls++
        const seen = db
        if (calls === 1) await held
        return `${id}:${seen}`
      },
      { name: "customer", entityParam: "id", ttl: 60 },
    )
    const session = new Session()
    // Synchronous inside run(): without AsyncLocalStorage an await would move the later calls to the default cache,
    // where invalidate() has nothing to forget.
    const [first, after] = session.run(() => {
      const first = tool({ id: "c1" })
      db = "new"
      tool.invalidate({ id: "c1" })
      return [first, tool({ id: "c1" })]
    })
    release()
    expect(await first).toBe("c1:old")
    expect(await after).toBe("c1:new")
    expect(await session.bind(tool)({ id: "c1" })).toBe("c1:new")
    expect(calls).toBe(2)
  })
})
