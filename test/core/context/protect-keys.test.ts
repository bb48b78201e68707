import { describe, expect, it } from "vitest"
import { protect, Session } from "../../../src/core/context/index.ts"
import { InvalidOptionError, MyceliumError } from "../../../src/core/errors.ts"
import { parseToolArguments, type ToolArguments } from "../../../src/tools.ts"

// Two modules' tools whose functions happen to share a name.
function twoGets() {
  const customers = protect(
    async function get({ id }: { id: string }) {
      return `customer ${id}`
    },
    { entityParam: "id" },
  )
  const invoices = protect(
    async function get({ id }: { id: string }) {
      return `invoice ${id}`
    },
    { entityParam: "id" },
  )
  return { customers, invoices }
}

describe("protect: cache keys of different tools", () => {
  it("keeps apart two tools whose functions share a name, in the default cache and in a session", async () => {
    const { customers, invoices } = twoGets()
    expect(customers.toolName).toBe(invoices.toolName)
    expect([await customers({ id: "42" }), await invoices({ id: "42" })]).toEqual([
      "customer 42",
      "invoice 42",
    ])
    const session = new Session()
    await session.run(async () => {
      expect([await customers({ id: "7" }), await invoices({ id: "7" })]).toEqual(["customer 7", "invoice 7"])
    })
    const load = (tag: string) => {
      const load = async (x: { id: string }) => `${tag}:${x.id}`
      return session.bind(protect(load))
    }
    const [a, b] = [load("A"), load("B")]
    expect([await a({ id: "1" }), await b({ id: "1" })]).toEqual(["A:1", "B:1"])
  })

  it("still hits and invalidates its own entries; an explicit shared name shares them", async () => {
    let calls = 0
    const { customers } = twoGets()
    const counted = protect(
      async function get({ id }: { id: string }) {
        return `${id}#${++calls}`
      },
      { entityParam: "id" },
    )
    const session = new Session()
    const call = session.bind(counted)
    expect([await call({ id: "a" }), await call({ id: "a" })]).toEqual(["a#1", "a#1"])
    session.run(() => counted.invalidate({ id: "a" }))
    expect(await call({ id: "a" })).toBe("a#2")
    expect(await session.bind(customers)({ id: "a" })).toBe("customer a")

    const first = protect(async ({ id }: { id: string }) => `first ${id}`, {
      name: "lookup",
      entityParam: "id",
    })
    const second = protect(async ({ id }: { id: string }) => `second ${id}`, {
      name: "lookup",
      entityParam: "id",
    })
    expect(first.cacheKey({ id: "x" })).toBe(second.cacheKey({ id: "x" }))
    expect(await session.bind(first)({ id: "x" })).toBe("first x")
    expect(await session.bind(second)({ id: "x" })).toBe("first x")
  })
})

describe("protect: entity ids that JSON cannot write", () => {
  it("keys NaN, Infinity and -Infinity by their text, apart from each other and from the id 'null'", async () => {
    let calls = 0
    const tool = protect(async ({ id }: { id: unknown }) => `${String(id)}#${++calls}`, {
      name: "by_number",
      entityParam: "id",
    })
    const call = new Session().bind(tool)
    const ids = [NaN, Infinity, -Infinity, "null"]
    // JSON writes all three numbers as null: the first one's result was served for the others, and for "null".
    expect(await Promise.all(ids.map((id) => call({ id })))).toEqual([
      "NaN#1",
      "Infinity#2",
      "-Infinity#3",
      "null#4",
    ])
    expect(await call({ id: "NaN" })).toBe("NaN#1") // an id keeps its text form, as 42 and "42" do
  })

  it("keys them by their text inside the arguments too, apart from null", async () => {
    let calls = 0
    const call = new Session().bind(protect(async (_: { limit: unknown }) => ++calls, { name: "all_args" }))
    expect([
      await call({ limit: NaN }),
      await call({ limit: null }),
      await call({ limit: Infinity }),
    ]).toEqual([1, 2, 3])
  })

  // parseToolArguments keeps a float beyond 2^53 the model wrote as one (1e16) as a boxed Number, which has no keys:
  // every such id was the entity {}, and customer 2e16 was served customer 1e16's record.
  it("keys the boxed Numbers parseToolArguments makes by the number they hold", async () => {
    let calls = 0
    const fetch = async (a: ToolArguments) => `${String(a.customer_id)}#${++calls}`
    const byId = new Session().bind(protect(fetch, { name: "by_id", entityParam: "customer_id" }))
    const byArgs = new Session().bind(protect(fetch, { name: "by_args" }))
    for (const call of [byId, byArgs]) {
      const [a, b] = ['{"customer_id": 1e16}', '{"customer_id": 2e16}'].map(parseToolArguments)
      expect(a?.customer_id).toBeInstanceOf(Number)
      const first = await call(a as ToolArguments)
      expect(await call(b as ToolArguments)).toBe(`20000000000000000#${calls}`)
      expect(await call({ customer_id: 1e16 })).toBe(first) // the number it holds: one entity
    }
    expect(calls).toBe(4)
  })
})

describe("protect: null or undefined arguments with entityParam", () => {
  const fetchCustomer = protect(async ({ customerId }: { customerId: string }) => customerId, {
    name: "fetch_customer",
    entityParam: "customerId",
  })

  it.each([null, undefined])(
    "rejects a call with %s as InvalidOptionError naming the argument to pass",
    async (args) => {
      const error = await fetchCustomer(args as never).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidOptionError)
      expect(error).toBeInstanceOf(MyceliumError)
      expect(error).toMatchObject({
        code: "invalid_option",
        message: expect.stringContaining('"customerId"'),
      })
    },
  )

  it("invalidate(null) throws InvalidOptionError", () => {
    expect(() => fetchCustomer.invalidate(null as never)).toThrow(InvalidOptionError)
  })

  it("without entityParam, null arguments are still one key and the tool runs", async () => {
    const all = protect(async (a: object) => a, { name: "all" })
    expect(await new Session().bind(all)(null as never)).toBeNull()
  })
})

describe("protect: the text a key spells its arguments in", () => {
  // Pinned as the Frame-based walker spelled them, so a rewrite of the walker cannot move an entry's key.
  const keyed = protect(async (_: object) => 1, { name: "k" })
  const byEntity = protect(async (_: { id: unknown }) => 1, { name: "k", entityParam: "id" })
  const text = (key: string): unknown => (JSON.parse(key) as unknown[])[2]

  it("spells members sorted, lists in order, Maps and Sets sorted by text, and what JSON cannot write", () => {
    const args = { b: [1, -0, 2.5, Number.NaN, null, undefined], a: 'x"y', c: true, é: 10n }
    expect(text(keyed.cacheKey(args))).toBe('{"a":"x\\"y","b":[1,0,2.5,NaN,null,undefined],"c":true,"é":10}')
    const rich = {
      m: new Map<unknown, unknown>([
        ["b", 1],
        [{ k: 2 }, [3]],
        ["a", new Set(["z", 1, "y"])],
      ]),
      d: new Date(0),
      n: new Number(7),
      f: undefined,
      s: Symbol("q"),
    }
    expect(text(keyed.cacheKey(rich))).toBe(
      '{"d":"1970-01-01T00:00:00.000Z","f":undefined,"m":Map("a"=>Set("y","z",1),"b"=>1,{"k":2}=>[3]),"n":7,"s":Symbol(q)}',
    )
  })

  it("spells a structured entity in its own namespace and an id as its text", () => {
    expect(JSON.parse(byEntity.cacheKey({ id: { z: 1, a: [new Map([[1, "one"]])] } }))).toEqual([
      "k",
      "entity-json",
      '{"a":[Map(1=>"one")],"z":1}',
    ])
    expect(JSON.parse(byEntity.cacheKey({ id: 42 }))).toEqual(["k", "entity", "42"])
  })

  // Spelled "9007199254740993n", the bigint shared its entry with that string id, another entity.
  it("spells a bigint as its digits, as Python's str() spells an int", async () => {
    const seen: unknown[] = []
    const get = protect(
      async ({ id }: { id: unknown }) => {
        seen.push(id)
        return String(id)
      },
      { name: "bigint_ids", entityParam: "id" },
    )
    const call = new Session().bind(get)
    expect(await call({ id: 9007199254740993n })).toBe("9007199254740993")
    expect(await call({ id: "9007199254740993n" })).toBe("9007199254740993n")
    expect(await call({ id: "9007199254740993" })).toBe("9007199254740993") // one entity with the bigint
    expect(seen).toEqual([9007199254740993n, "9007199254740993n"])
    expect(get.cacheKey({ id: 5n })).toBe(get.cacheKey({ id: 5 }))
  })
})
