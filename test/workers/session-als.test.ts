// Sessions inside workerd: with the nodejs_compat flag (wrangler.toml) the async-context entry registers
// node:async_hooks' AsyncLocalStorage, and concurrent requests' sessions stay apart across awaits.
import { describe, expect, it } from "vitest"
import "../../src/async-context.ts"
import { defaultCache, hasAsyncContext, protect, Session } from "../../src/core/context/index.ts"

describe("Session in workerd with nodejs_compat", () => {
  it("propagates across await and isolates concurrent runs", async () => {
    expect(hasAsyncContext()).toBe(true)
    let calls = 0
    const lookup = protect(
      async ({ id }: { id: string }) => {
        calls++
        await new Promise((r) => setTimeout(r, 1))
        return `${id}@${calls}`
      },
      { entityParam: "id", name: "workerd_als_lookup" },
    )
    const sessions = Array.from({ length: 8 }, () => new Session())
    const seen = await Promise.all(
      sessions.map((s) =>
        s.run(async () => {
          await new Promise((r) => setTimeout(r, 1))
          const first = await lookup({ id: "a" })
          await Promise.resolve()
          const again = await lookup({ id: "a" })
          return Session.current() === s && first === again
        }),
      ),
    )
    expect(seen).toEqual(Array(8).fill(true))
    expect(calls).toBe(8)
    for (const s of sessions) expect(s.cache.has(lookup.cacheKey({ id: "a" }))).toBe(true)
    expect(defaultCache.has(lookup.cacheKey({ id: "a" }))).toBe(false)
    expect(Session.current()).toBeUndefined()
  })
})
