// createLedgerApp checks its body limits and its ActionLedger options when the app is built. A NaN maxBodyBytes let
// a 5 MB body in, a NaN or huge maxDepth turned a deep body into a 500 (a stack overflow), and a NaN
// presumedDeadAfter or an unknown onArgsDrift built fine, then answered every agent call with a 400 that blamed it.
import { describe, expect, it } from "vitest"
import { InvalidOptionError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, type LedgerAppOptions } from "../../src/edge/app.ts"

const build = (o: object) => () =>
  createLedgerApp({ storage: new MemoryLedgerStorage(), ...o } as LedgerAppOptions)
const label = (o: object) => JSON.stringify(o, (_, v) => (typeof v === "number" ? String(v) : v))

const begin = (args: string) =>
  `{"tool":"pay","args":${args},"meta":{"tool_call_id":"c1"},"binding":{"agent_id":"a","policy_version":"1","side_effect_class":"keyed_mutate"}}`
const post = (app: ReturnType<typeof createLedgerApp>, body: string) =>
  app.request("/v1/calls", { method: "POST", headers: { "content-type": "application/json" }, body })

describe("createLedgerApp body limits and ledger options", () => {
  it("refuses body limits that are not whole numbers in range, naming the limit", () => {
    for (const limits of [
      { maxBodyBytes: Number.NaN },
      { maxBodyBytes: 0 },
      { maxBodyBytes: 1.5 },
      { maxBodyBytes: Number.POSITIVE_INFINITY },
      { maxBodyBytes: "1000" },
      { maxDepth: Number.NaN },
      { maxDepth: 0 },
      { maxDepth: 1e9 },
      { maxDepth: 1001 },
    ]) {
      const name = Object.keys(limits)[0] as string
      expect(build({ limits }), label(limits)).toThrow(InvalidOptionError)
      expect(build({ limits }), label(limits)).toThrow(`limits.${name}`)
    }
  })

  it("refuses presumedDeadAfter and onArgsDrift as ActionLedger does, when the app is built", () => {
    for (const o of [
      { presumedDeadAfter: Number.NaN },
      { presumedDeadAfter: -1 },
      { onArgsDrift: "strict" },
    ]) {
      expect(build(o), label(o)).toThrow(InvalidOptionError)
      expect(build(o), label(o)).toThrow(Object.keys(o)[0] as string)
    }
  })

  it("refuses page sizes and a pollInterval that would not apply, when the app is built", async () => {
    // NaN let `?limit=1000000000` through (limit > NaN is false) and told agents `retry_after: null`.
    for (const o of [
      { maxPageSize: Number.NaN },
      { maxPageSize: 0 },
      { maxPageSize: 10_000 },
      { defaultPageSize: "100" as unknown as number },
      { defaultPageSize: 600 },
      { maxPageSize: 10, defaultPageSize: 20 },
      { pollInterval: Number.NaN },
      { pollInterval: 0 },
      { pollInterval: -1 },
    ]) {
      expect(build(o), label(o)).toThrow(InvalidOptionError)
      expect(build(o), label(o)).toThrow(Object.keys(o).at(-1) as string)
    }
    const app = createLedgerApp({ storage: new MemoryLedgerStorage(), maxPageSize: 50, pollInterval: 0.2 })
    expect((await app.request("/v1/transitions?limit=51")).status).toBe(400)
    expect((await app.request("/v1/transitions?limit=50")).status).toBe(200)
  })

  it("applies limits it takes, a depth up to 1,000 included", async () => {
    const small = createLedgerApp({ storage: new MemoryLedgerStorage(), limits: { maxBodyBytes: 1000 } })
    expect((await post(small, begin(`{"blob":"${"x".repeat(5000)}"}`))).status).toBe(413)
    const deep = createLedgerApp({ storage: new MemoryLedgerStorage(), limits: { maxDepth: 1000 } })
    const nested = (d: number) => `{"x":${"[".repeat(d)}${"]".repeat(d)}}`
    expect((await post(deep, begin(nested(990)))).status).toBe(200)
    const res = await post(deep, begin(nested(5000)))
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: "too_deep" } })
    const ok = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      presumedDeadAfter: 60,
      onArgsDrift: "hard",
    })
    expect((await post(ok, begin("{}"))).status).toBe(200)
  })
})
