// A load that asks the cache for its own key before its first await joined a flight whose promise was not assigned
// yet, and got undefined as the value. It now joins that flight once its promise exists.
import { describe, expect, it } from "vitest"
import { protect, Session, ToolCache } from "../../../src/core/context/index.ts"

describe("single-flight: a load asking for its own key", () => {
  it("before its first await, gets the load's own value, and the other load never runs", async () => {
    const cache = new ToolCache({ clock: () => 0 })
    let inner: Promise<unknown> | undefined
    let others = 0
    const outer = cache.getOrLoad("k", 60, () => {
      inner = cache.getOrLoad("k", 60, () => ++others)
      return "value"
    })
    expect(await outer).toBe("value")
    expect(await inner).toBe("value")
    expect(others).toBe(0)
  })

  it("before its first await, shares the error of a load that throws at once, which clears its flight", async () => {
    const cache = new ToolCache({ clock: () => 0 })
    let inner: Promise<unknown> | undefined
    const boom = new Error("boom")
    const outer = cache.getOrLoad("k", 60, () => {
      inner = cache.getOrLoad("k", 60, () => "other")
      throw boom
    })
    await expect(outer).rejects.toBe(boom)
    await expect(inner).rejects.toBe(boom)
    expect(await cache.getOrLoad("k", 60, () => "next")).toBe("next")
  })

  it("a protected tool that calls itself with the same arguments before awaiting", async () => {
    let calls = 0
    let nested: Promise<string> | undefined
    const tool = protect(
      ({ id }: { id: string }): Promise<string> => {
        calls++
        nested ??= call({ id })
        return Promise.resolve(`row ${id}`)
      },
      { name: "self_call", entityParam: "id" },
    )
    const call = new Session().bind(tool)
    expect(await call({ id: "a" })).toBe("row a")
    expect(await nested).toBe("row a")
    expect(calls).toBe(1)
  })
})
