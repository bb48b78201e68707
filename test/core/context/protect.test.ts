import { describe, expect, it, vi } from "vitest"
import { ContextGuardConfigError, protect, Session, ToolCache } from "../../../src/core/context/index.ts"

function fakeClock(start = 1000) {
  let now = start
  return { now: () => now, advance: (s: number) => (now += s) }
}

describe("protect", () => {
  it("shares one call among 50 concurrent misses on one entity", async () => {
    let calls = 0
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const fetchCustomer = protect(
      async ({ customerId }: { customerId: string }) => {
        calls++
        await gate
        return { id: customerId }
      },
      { entityParam: "customerId", ttl: 60, name: "fetch_customer" },
    )
    await new Session().run(async () => {
      const all = Array.from({ length: 50 }, () => fetchCustomer({ customerId: "c1" }))
      release()
      const results = await Promise.all(all)
      expect(calls).toBe(1)
      expect(new Set(results).size).toBe(1)
      expect(results[0]).toEqual({ id: "c1" })
    })
  })

  it("refetches after the TTL with an injected clock in seconds", async () => {
    const clock = fakeClock()
    const fn = vi.fn(async ({ id }: { id: string }) => `v-${id}-${fn.mock.calls.length}`)
    const tool = protect(fn, { entityParam: "id", ttl: 10, clock: clock.now, name: "t" })
    const session = new Session()
    const call = session.bind(tool)
    expect(await call({ id: "a" })).toBe("v-a-1")
    clock.advance(9.999)
    expect(await call({ id: "a" })).toBe("v-a-1")
    clock.advance(0.001)
    expect(await call({ id: "a" })).toBe("v-a-2")
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it('defaults to the original\'s ttl of 300 s, and an entity id keys by its text (42 and "42" are one entity)', async () => {
    const clock = fakeClock()
    const fn = vi.fn(async ({ id }: { id: unknown }) => `v${fn.mock.calls.length}:${String(id)}`)
    const call = new Session().bind(protect(fn, { entityParam: "id", clock: clock.now, name: "d" }))
    expect(await call({ id: 42 })).toBe("v1:42")
    clock.advance(299.999)
    expect(await call({ id: "42" })).toBe("v1:42")
    clock.advance(0.001)
    expect(await call({ id: 42 })).toBe("v2:42")
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it("tools sharing a name judge an entry by the clock that stamped it, not the reader's", async () => {
    const wall = fakeClock(1_800_000_000)
    const mono = fakeClock(5)
    let loads = 0
    const load = async (_: { id: string }) => `v${++loads}`
    const session = new Session()
    const a = session.bind(protect(load, { name: "customer", entityParam: "id", ttl: 1, clock: wall.now }))
    const b = session.bind(protect(load, { name: "customer", entityParam: "id", ttl: 1, clock: mono.now }))
    expect(await a({ id: "c1" })).toBe("v1")
    wall.advance(1.5)
    mono.advance(1.5)
    // Before, B compared its own clock (6.5) with A's expiry (1_800_000_001) and served v1 for ever.
    expect(await b({ id: "c1" })).toBe("v2")
    expect(await a({ id: "c1" })).toBe("v2")
  })

  it("a hung load begun on one clock is not joined past its ttl by a tool on another clock", async () => {
    const wall = fakeClock(1_800_000_000)
    const mono = fakeClock(5)
    const hung = new Promise<string>(() => {})
    const a = protect(async (_: { id: string }) => hung, {
      name: "hang",
      entityParam: "id",
      ttl: 1,
      clock: wall.now,
    })
    const b = protect(async (_: { id: string }) => "fresh", {
      name: "hang",
      entityParam: "id",
      ttl: 1,
      clock: mono.now,
    })
    const session = new Session()
    void session.bind(a)({ id: "c1" })
    wall.advance(2)
    expect(await session.bind(b)({ id: "c1" })).toBe("fresh")
  })

  it("keys by entity, ignoring other arguments, and separates entities", async () => {
    const fn = vi.fn(async (a: { id: number; verbose: boolean }) => a.id * 10)
    const tool = protect(fn, { entityParam: "id", name: "e" })
    const call = new Session().bind(tool)
    expect(await call({ id: 1, verbose: false })).toBe(10)
    expect(await call({ id: 1, verbose: true })).toBe(10)
    expect(await call({ id: 2, verbose: true })).toBe(20)
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it("keys by all arguments when there is no entity (the original returned one value for any args)", async () => {
    const fn = vi.fn(async (a: { q: string; n?: number }) => `${a.q}${a.n ?? ""}`)
    const call = new Session().bind(protect(fn, { name: "search" }))
    expect(await call({ q: "x" })).toBe("x")
    expect(await call({ q: "y" })).toBe("y")
    expect(await call({ n: 1, q: "x" })).toBe("x1")
    expect(await call({ q: "x", n: 1 })).toBe("x1")
    expect(fn).toHaveBeenCalledTimes(3)
  })

  it("caches null and undefined results", async () => {
    const nul = vi.fn(async (_: { id: string }) => null)
    const und = vi.fn(async (_: { id: string }) => undefined)
    const s = new Session()
    const a = s.bind(protect(nul, { entityParam: "id", name: "n" }))
    const b = s.bind(protect(und, { entityParam: "id", name: "u" }))
    expect(await a({ id: "1" })).toBeNull()
    expect(await a({ id: "1" })).toBeNull()
    expect(await b({ id: "1" })).toBeUndefined()
    expect(await b({ id: "1" })).toBeUndefined()
    expect(nul).toHaveBeenCalledTimes(1)
    expect(und).toHaveBeenCalledTimes(1)
  })

  it("clears the key on error and rejects every concurrent waiter", async () => {
    let n = 0
    const tool = protect(
      async (_: { id: string }) => {
        n++
        await Promise.resolve()
        if (n === 1) throw new Error("db down")
        return "ok"
      },
      { entityParam: "id", name: "flaky" },
    )
    const call = new Session().bind(tool)
    const results = await Promise.allSettled([call({ id: "a" }), call({ id: "a" })])
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"])
    expect(n).toBe(1)
    expect(await call({ id: "a" })).toBe("ok")
    expect(n).toBe(2)
  })

  it("isolates sessions and invalidates one entry", async () => {
    const fn = vi.fn(async ({ id }: { id: string }) => id)
    const tool = protect(fn, { entityParam: "id", name: "iso" })
    const s1 = new Session()
    const s2 = new Session()
    await s1.bind(tool)({ id: "a" })
    await s2.bind(tool)({ id: "a" })
    expect(fn).toHaveBeenCalledTimes(2)
    s1.run(() => tool.invalidate({ id: "a" }))
    expect(s1.cache.has(tool.cacheKey({ id: "a" }))).toBe(false)
    expect(s2.cache.has(tool.cacheKey({ id: "a" }))).toBe(true)
  })

  it("rejects bad configuration at wrap time", () => {
    expect(() => protect(async () => 1, { ttl: -1, name: "x" })).toThrow(ContextGuardConfigError)
    expect(() => protect(async () => 1, { ttl: Number.NaN, name: "x" })).toThrow(/ttl/)
    expect(() => protect(async () => 1, { ttl: Number.POSITIVE_INFINITY, name: "x" })).toThrow(
      "ttl must be a finite number of seconds >= 0, got Infinity. Pass e.g. { ttl: 60 }.",
    )
    // Named "" explicitly: Bun's transpiler gives `[async () => 1][0]` an inferred name, V8 does not.
    const anonymous = Object.defineProperty(async (_: object) => 1, "name", { value: "" })
    expect(() => protect(anonymous)).toThrow(/name/)
    // A clock that is not a function rejected every call with a bare TypeError instead.
    const notClock = { name: "x", clock: 60 as unknown as () => number }
    expect(() => protect(async () => 1, notClock)).toThrow(ContextGuardConfigError)
    expect(() => new ToolCache({ clock: notClock.clock })).toThrow(/clock must be a function/)
  })

  it("ToolCache honours ttl 0 as never fresh but still single-flight", async () => {
    const cache = new ToolCache({ clock: () => 5 })
    let calls = 0
    const load = async () => ++calls
    const [a, b] = await Promise.all([cache.getOrLoad("k", 0, load), cache.getOrLoad("k", 0, load)])
    expect([a, b]).toEqual([1, 1])
    expect(await cache.getOrLoad("k", 0, load)).toBe(2)
  })
})

describe("protect: loads that throw at once, hang or finish late", () => {
  it("a tool that throws synchronously is called again next time (its error is not cached)", async () => {
    let calls = 0
    const lookup = protect(
      ({ id }: { id: string }) => {
        calls++
        if (calls === 1) throw new Error("upstream refused")
        return `row ${id}`
      },
      { name: "lookup", entityParam: "id", ttl: 60 },
    )
    const cache = new ToolCache()
    await expect(lookup.withCache(cache, { id: "a" })).rejects.toThrow("upstream refused")
    expect(await lookup.withCache(cache, { id: "a" })).toBe("row a")
    expect(calls).toBe(2)
  })

  it("a load that hangs holds its key for at most ttl: a later caller starts its own", async () => {
    const clock = fakeClock()
    const calls: string[] = []
    let hangs = true
    const lookup = protect(
      async ({ id }: { id: string }) => {
        calls.push(id)
        if (hangs) return new Promise<string>(() => {})
        return `row ${id}`
      },
      { name: "lookup", entityParam: "id", ttl: 30, clock: clock.now },
    )
    const cache = new ToolCache()
    void lookup.withCache(cache, { id: "a" })
    clock.advance(30)
    void lookup.withCache(cache, { id: "a" }) // still within ttl: joins the hung load
    expect(calls).toEqual(["a"])
    clock.advance(1)
    hangs = false
    expect(await lookup.withCache(cache, { id: "a" })).toBe("row a")
    expect(calls).toEqual(["a", "a"])
  })

  it("an outdated load that finishes or fails after a newer one neither overwrites nor clears its value", async () => {
    const clock = fakeClock()
    const pending: Array<{ resolve: (v: string) => void; reject: (e: Error) => void }> = []
    const lookup = protect(
      () =>
        new Promise<string>((resolve, reject) => {
          pending.push({ resolve, reject })
        }),
      { name: "lookup", ttl: 10, clock: clock.now },
    )
    const cache = new ToolCache()
    const old = lookup.withCache(cache, {})
    const older = lookup.withCache(cache, {})
    clock.advance(11)
    const fresh = lookup.withCache(cache, {})
    pending[1]?.resolve("new")
    expect(await fresh).toBe("new")
    pending[0]?.resolve("old")
    expect(await old).toBe("old")
    expect(await older).toBe("old")
    expect(await lookup.withCache(cache, {})).toBe("new")
    // A second generation: the outdated load fails after the newer one stored its value.
    clock.advance(11)
    const stale = lookup.withCache(cache, {})
    clock.advance(11)
    const newer = lookup.withCache(cache, {})
    pending[3]?.resolve("newest")
    expect(await newer).toBe("newest")
    pending[2]?.reject(new Error("late failure"))
    await expect(stale).rejects.toThrow("late failure")
    expect(await lookup.withCache(cache, {})).toBe("newest")
    expect(pending).toHaveLength(4)
  })
})
