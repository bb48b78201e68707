import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import {
  configureAsyncContext,
  defaultCache,
  hasAsyncContext,
  protect,
  Session,
} from "../../../src/core/context/index.ts"

// What browsers get: no AsyncLocalStorage. run() is synchronous-scope only.
describe("Session without AsyncLocalStorage (browser behaviour)", () => {
  beforeAll(() => configureAsyncContext(undefined))
  afterAll(() => defaultCache.clear())

  it("reports that implicit propagation is unavailable", () => {
    expect(hasAsyncContext()).toBe(false)
  })

  it("uses the session for calls made before the first await, the default cache after it", async () => {
    const fn = vi.fn(async ({ id }: { id: string }) => id)
    const tool = protect(fn, { entityParam: "id", name: "browser_tool" })
    const session = new Session()
    await session.run(async () => {
      await tool({ id: "sync-part" })
      await tool({ id: "after-await" })
    })
    expect(session.cache.has(tool.cacheKey({ id: "sync-part" }))).toBe(true)
    expect(session.cache.has(tool.cacheKey({ id: "after-await" }))).toBe(false)
    expect(defaultCache.has(tool.cacheKey({ id: "after-await" }))).toBe(true)
    expect(Session.current()).toBeUndefined()
  })

  it("session.bind pins a tool to the session in every runtime", async () => {
    const tool = protect(async ({ id }: { id: string }) => id, { entityParam: "id", name: "bound_tool" })
    const session = new Session()
    const bound = session.bind(tool)
    await Promise.resolve()
    await bound({ id: "x" })
    expect(session.cache.has(tool.cacheKey({ id: "x" }))).toBe(true)
    expect(defaultCache.has(tool.cacheKey({ id: "x" }))).toBe(false)
  })
})
