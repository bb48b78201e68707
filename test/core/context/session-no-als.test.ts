import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
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

  // bind() passed the cache to the outer tool only: the inner one used the default cache, and session b got
  // session a's customer. Without AsyncLocalStorage this holds up to the body's first await.
  it("session.bind runs the tool inside the session, so a protected tool it calls uses the session's cache", async () => {
    let version = "v1"
    const getCustomer = protect(async ({ id }: { id: string }) => ({ id, version }), {
      name: "bind_inner_customer",
      entityParam: "id",
    })
    const getOrder = protect(
      async ({ orderId }: { orderId: string }) => ({ orderId, customer: await getCustomer({ id: "c1" }) }),
      { name: "bind_outer_order", entityParam: "orderId" },
    )
    const a = new Session()
    expect((await a.bind(getOrder)({ orderId: "o1" })).customer.version).toBe("v1")
    version = "v2"
    const b = new Session()
    expect((await b.bind(getOrder)({ orderId: "o1" })).customer.version).toBe("v2")
    expect(a.cache.has(getCustomer.cacheKey({ id: "c1" }))).toBe(true)
    expect(defaultCache.has(getCustomer.cacheKey({ id: "c1" }))).toBe(false)
    expect(Session.current()).toBeUndefined()
  })
})

describe("config.run without AsyncLocalStorage", () => {
  beforeAll(() => configureAsyncContext(undefined))

  it("says once that its calls are not scoped by the run, and they are not", async () => {
    const warnings: string[] = []
    const yaml =
      "transition:\n  agent_id: a\n  policy_version: v1\naction_ledger:\n  tools: [pay]\n" +
      "tools:\n  pay:\n    side_effect_class: keyed_mutate\n"
    const config = loadConfigFromString(yaml, { env: {}, onWarning: (m) => warnings.push(m) })
    const { pay } = config.instrument({ pay: async (args: { n: number }) => args.n })
    for (const id of ["r1", "r2"]) await config.run(id, () => pay({ n: 1 }, { toolCallId: `tc-${id}` }))
    expect(warnings.filter((w) => w.startsWith("config.run('r1')"))).toHaveLength(1)
    expect(warnings.join("\n")).toContain("mycelium-runtime/async-context")
    expect(warnings.join("\n")).not.toContain("config.run('r2')")
    const rows = await (await config.ledgerFor("pay"))?.listTransitions()
    expect(rows?.map((r) => [r.kwargs.tool_call_id, r.kwargs.run_id ?? null])).toEqual([
      ["tc-r1", null],
      ["tc-r2", null],
    ])
    await config.close()
  })
})
