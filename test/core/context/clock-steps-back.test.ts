// A clock passed to protect() or ToolCache may step back (a wall clock after an NTP correction): a result stored
// before the step is of unknown age then, and is read again rather than served past its ttl.
import { describe, expect, it } from "vitest"
import { protect, Session, ToolCache } from "../../../src/core/context/index.ts"

describe("a clock that steps back", () => {
  it("does not keep an entry fresh for the step and the ttl", async () => {
    let now = 1_000_000
    let loads = 0
    const get = protect(async ({ id }: { id: string }) => ({ id, load: ++loads }), {
      name: "get",
      entityParam: "id",
      ttl: 60,
      clock: () => now,
    })
    const call = new Session().bind(get)
    expect(await call({ id: "a" })).toEqual({ id: "a", load: 1 })
    now += 30
    expect(await call({ id: "a" })).toEqual({ id: "a", load: 1 })
    // The wall clock steps back an hour, then two minutes pass: the entry is 150 s old, past its 60 s ttl.
    now -= 3600
    now += 120
    // Before the fix: { load: 1 } for another hour.
    expect(await call({ id: "a" })).toEqual({ id: "a", load: 2 })
    expect(await call({ id: "a" })).toEqual({ id: "a", load: 2 })
    expect(loads).toBe(2)
  })

  it("does not join a load begun before the step, which may hang", async () => {
    let now = 1_000_000
    const cache = new ToolCache({ clock: () => now })
    let loads = 0
    const hung = cache.getOrLoad("k", 10, () => {
      loads++
      return new Promise<string>(() => {})
    })
    now -= 100
    now += 50
    // Before the fix: joined the hung load (age -50 <= ttl), and every caller hung with it for 100 s more.
    const next = cache.getOrLoad("k", 10, () => {
      loads++
      return "fresh"
    })
    const late = new Promise((resolve) => setTimeout(resolve, 1000, "hung"))
    expect(await Promise.race([next, late])).toBe("fresh")
    expect(loads).toBe(2)
    expect(cache.has("k")).toBe(true)
    void hung
  })

  it("still serves an entry within its ttl on a clock that only moves forward, and counts it live", async () => {
    let now = 0
    const cache = new ToolCache({ clock: () => now })
    await cache.getOrLoad("k", 10, () => "v")
    now = 9.999
    expect(cache.has("k")).toBe(true)
    expect(cache.size).toBe(1)
    now = 10
    expect(cache.has("k")).toBe(false)
    expect(cache.size).toBe(0)
  })
})
