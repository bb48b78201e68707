// protect()'s key reads an object by its own enumerable keys, so objects whose data sits elsewhere all keyed as "{}"
// and one entity's result was served for another's: boxed primitives, class instances (getters, private fields),
// inherited members, URLSearchParams. Such objects are refused, as the ledger refuses them; boxed primitives are
// keyed by the value they hold; Map keys and Set members are told apart by type (1n is not the key 1).
import { describe, expect, it } from "vitest"
import { protect, Session } from "../../../src/core/context/index.ts"
import { InvalidOptionError } from "../../../src/core/errors.ts"

// A tool counting its calls, pinned to a fresh session's cache (no AsyncLocalStorage needed).
function counted<A extends object>(name: string, entityParam?: keyof A & string) {
  const calls: A[] = []
  const tool = protect(
    async (a: A) => {
      calls.push(a)
      return calls.length
    },
    { name, entityParam },
  )
  return { tool, call: new Session().bind(tool), calls }
}

describe("protect() keys: boxed primitives are the value they hold", () => {
  it("new Boolean(true) and new Boolean(false) are two entities, each the same as its primitive", async () => {
    const flag = protect(async ({ on }: { on: object | boolean }) => `on=${on.valueOf()}`, {
      name: "flag",
      entityParam: "on",
    })
    const f = new Session().bind(flag)
    expect([await f({ on: new Boolean(true) }), await f({ on: new Boolean(false) })]).toEqual([
      "on=true",
      "on=false",
    ])
    expect(flag.cacheKey({ on: new Boolean(false) })).toBe(flag.cacheKey({ on: false }))
  })

  it("boxed Strings, Booleans and BigInts inside the arguments key as their values", () => {
    const { tool } = counted<{ v: unknown }>("boxed_args")
    const key = (v: unknown) => tool.cacheKey({ v })
    expect(key(new Boolean(true))).not.toBe(key(new Boolean(false)))
    expect(key(new Boolean(false))).toBe(key(false))
    expect(key(new String("a"))).not.toBe(key(new String("b")))
    expect(key(new String("a"))).toBe(key("a"))
    expect(key(Object(1n))).not.toBe(key(Object(2n)))
    expect(key(Object(1n))).toBe(key(1n))
  })

  it("a boxed String or BigInt entity is the id it holds (ids key by their text)", () => {
    const { tool } = counted<{ id: unknown }>("boxed_ids", "id")
    expect(tool.cacheKey({ id: new String("42") })).toBe(tool.cacheKey({ id: 42 }))
    expect(tool.cacheKey({ id: Object(7n) })).toBe(tool.cacheKey({ id: "7" }))
    expect(tool.cacheKey({ id: Object(7n) })).not.toBe(tool.cacheKey({ id: Object(8n) }))
  })
})

describe("protect() keys: objects that are not plain are refused", () => {
  class CustomerRef {
    readonly #id: string
    constructor(id: string) {
      this.#id = id
    }
    get id() {
      return this.#id
    }
  }

  it("a class instance holding its data in private fields behind getters (entity or argument)", async () => {
    const fetchCustomer = protect(
      async ({ customer }: { customer: CustomerRef }) => `record of ${customer.id}`,
      {
        name: "customer",
        entityParam: "customer",
      },
    )
    const f = new Session().bind(fetchCustomer)
    for (const id of ["alice", "bob"]) {
      const error = await f({ customer: new CustomerRef(id) }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidOptionError)
      expect(error).toMatchObject({
        code: "invalid_option",
        message: expect.stringContaining("class instance"),
      })
    }
    const { call, calls } = counted<{ who: CustomerRef }>("customer_args")
    await expect(call({ who: new CustomerRef("alice") })).rejects.toBeInstanceOf(InvalidOptionError)
    expect(calls).toHaveLength(0)
    expect(() => fetchCustomer.cacheKey({ customer: new CustomerRef("x") })).toThrow(InvalidOptionError)
    expect(() => fetchCustomer.invalidate({ customer: new CustomerRef("x") })).toThrow(InvalidOptionError)
  })

  it("arguments whose members are inherited (Object.create)", async () => {
    const { call, calls } = counted<{ id?: string }>("inherited")
    for (const id of ["1", "2"])
      await expect(call(Object.create({ id }) as { id: string })).rejects.toBeInstanceOf(InvalidOptionError)
    await expect(call({ id: "1" })).resolves.toBe(1)
    expect(calls).toEqual([{ id: "1" }])
  })

  it("a URLSearchParams, a Uint8Array, an Error and an object posing as a boxed Boolean", () => {
    const { tool } = counted<{ v: unknown }>("not_plain")
    for (const v of [
      new URLSearchParams("q=1"),
      new Uint8Array([1]),
      new Error("x"),
      Object.create(Boolean.prototype),
    ])
      expect(() => tool.cacheKey({ v })).toThrow(InvalidOptionError)
  })

  it("still keys plain and null-prototype objects, arrays, Maps, Sets, Dates and what has a toJSON", () => {
    const { tool } = counted<{ v: unknown }>("plain")
    const bare = Object.assign(Object.create(null) as object, { a: 1 })
    const withToJson = new (class Ref {
      toJSON() {
        return { ref: 1 }
      }
    })()
    const keys = [bare, [1], new Map([["a", 1]]), new Set([1]), new Date(0), withToJson].map((v) =>
      tool.cacheKey({ v }),
    )
    expect(new Set(keys).size).toBe(keys.length)
    expect(tool.cacheKey({ v: bare })).toBe(tool.cacheKey({ v: { a: 1 } }))
    expect(tool.cacheKey({ v: withToJson })).toBe(tool.cacheKey({ v: { ref: 1 } }))
  })
})

describe("protect() keys: Map keys and Set members by type", () => {
  it("the Map key 1n is not the key 1, nor the Set member 1n the member 1; a value 1n is still 1", () => {
    const { tool } = counted<{ v: unknown }>("map_keys")
    const key = (v: unknown) => tool.cacheKey({ v })
    expect(key(new Map([[1n, "a"]]))).not.toBe(key(new Map([[1, "a"]])))
    expect(key(new Set([1n]))).not.toBe(key(new Set([1])))
    expect(key(new Map([["a", 1n]]))).toBe(key(new Map([["a", 1]])))
    expect(key([1n])).toBe(key([1]))
  })
})
