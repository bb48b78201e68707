import { describe, expect, it, vi } from "vitest"
import "../../../src/async-context.ts"
import { defaultCache, hasAsyncContext, protect, Session } from "../../../src/core/context/index.ts"

describe("Session with AsyncLocalStorage (Node, Deno, Bun, Workers+nodejs_compat, the edge runtime)", () => {
  it("propagates across await and isolates concurrent runs", async () => {
    expect(hasAsyncContext()).toBe(true)
    const fn = vi.fn(async ({ id }: { id: string }) => id)
    const tool = protect(fn, { entityParam: "id", name: "als_tool" })
    const s1 = new Session()
    const s2 = new Session()
    const run = (s: Session) =>
      s.run(async () => {
        await new Promise((r) => setTimeout(r, 1))
        await tool({ id: "a" })
        expect(Session.current()).toBe(s)
      })
    await Promise.all([run(s1), run(s2)])
    expect(fn).toHaveBeenCalledTimes(2)
    expect(s1.cache.has(tool.cacheKey({ id: "a" }))).toBe(true)
    expect(s2.cache.has(tool.cacheKey({ id: "a" }))).toBe(true)
    expect(defaultCache.has(tool.cacheKey({ id: "a" }))).toBe(false)
  })

  it("restores the outer session after a nested run", async () => {
    const outer = new Session()
    const inner = new Session()
    await outer.run(async () => {
      await inner.run(async () => {
        await Promise.resolve()
        expect(Session.current()).toBe(inner)
      })
      expect(Session.current()).toBe(outer)
    })
    expect(Session.current()).toBeUndefined()
  })
})
