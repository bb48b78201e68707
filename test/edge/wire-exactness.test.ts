// What RemoteLedger sends and the edge API reads must mean the same call: a result the server would refuse is never
// sent (it left the row IN_FLIGHT and a redispatch ran the body again), a request id no route can name is refused
// before anything runs, integers beyond 2^53 key as ledger.tool() keys them, and another call's answer is not taken
// for this one's.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerResultUnstorableError,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { ManualClock } from "../../src/testing.ts"
import { parseToolArguments } from "../../src/tools.ts"

const JSON_HEADERS = { "content-type": "application/json" }
const binding = { agentId: "bank", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const wireBinding = { agent_id: "bank", policy_version: "1", side_effect_class: "keyed_mutate" }

function setup() {
  const storage = new MemoryLedgerStorage()
  const clock = new ManualClock()
  const app = createLedgerApp({ storage, clock })
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch
  const warnings: string[] = []
  const remote = new RemoteLedger({
    baseUrl: "http://edge.test",
    fetch,
    leaseRenewInterval: 0,
    onWarning: (m) => warnings.push(m),
  })
  const begin = async (body: string) => {
    const r = await app.request("/v1/calls", { method: "POST", headers: JSON_HEADERS, body })
    return { status: r.status, json: (await r.json()) as Record<string, unknown> }
  }
  return { app, storage, clock, remote, warnings, begin }
}

const localKey = async (args: Record<string, unknown>, toolCallId: string) => {
  const local = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
  let id = ""
  await local.tool({ name: "transfer", binding }, async (_a, tx) => {
    id = tx.requestId
  })(args, { toolCallId })
  return id
}

describe("results and failures the server would refuse", () => {
  const deep = "k".repeat(600)
  for (const [label, result] of [
    ["a lone surrogate (a string cut inside an emoji)", { text: "summary: 👍".slice(0, 10) }],
    ["U+0000", { text: "a\u0000b" }],
    ["a __proto__ key (an upstream API's JSON)", JSON.parse('{"doc":{"__proto__":{"x":1}}}')],
    ["U+0000 under keys longer than an unstorable message", { [deep]: { [deep]: "\u0000" } }],
    ["an operator_release member (a release's outputs)", { operator_release: true, resolved_by: "alice" }],
  ] as const) {
    it(`a result holding ${label} is completed as unstorable: the body runs once`, async () => {
      const { remote, storage, clock, warnings } = setup()
      let runs = 0
      const t = remote.tool({ name: "fetch_doc" }, async () => {
        runs++
        return result
      })
      await t({ url: "u" }, { toolCallId: "call_1" })
      const row = await storage.get("call_1")
      expect([row?.terminalOutcome, row?.result]).toEqual(["COMPLETED", null])
      expect(warnings.join()).toContain("not stored")
      clock.advance(61)
      await expect(t({ url: "u" }, { toolCallId: "call_1" })).rejects.toMatchObject({
        name: "LedgerResultUnstorableError",
        limit: "not_serializable",
      })
      await expect(t({ url: "u" }, { toolCallId: "call_1" })).rejects.toBeInstanceOf(
        LedgerResultUnstorableError,
      )
      expect(runs).toBe(1)
    })
  }

  it("a failure message cut at 4096 inside an emoji, or holding U+0000, is recorded", async () => {
    const { remote, storage, warnings } = setup()
    const long = `${"x".repeat(4096 - "Error: ".length - 1)}👍 tail`
    for (const [id, message] of [
      ["call_f", long],
      ["call_n", "bad\u0000byte"],
    ] as const) {
      const t = remote.tool({ name: "boom" }, async () => {
        throw new Error(message)
      })
      await expect(t({}, { toolCallId: id })).rejects.toThrow()
      const row = await storage.get(id)
      expect([id, row?.terminalOutcome]).toEqual([id, "FAILED_BEFORE_EFFECT"])
    }
    expect(warnings).toEqual([])
    expect((await storage.get("call_f"))?.error?.endsWith("x")).toBe(true)
    expect((await storage.get("call_n"))?.error).toBe("Error: bad\ufffdbyte")
  })
})

describe("request ids the routes could not name", () => {
  it("request_id_from over 512 characters is 400 invalid_request_id: nothing is claimed or run", async () => {
    const { remote, storage, begin } = setup()
    const order_ref = `ord_${"7".repeat(500)}`
    const raw = await begin(
      JSON.stringify({
        tool: "send_payment",
        args: { order_ref, amount: 1 },
        binding: { ...wireBinding, request_id_from: "order_ref" },
      }),
    )
    expect([raw.status, (raw.json.error as { code: string }).code]).toEqual([400, "invalid_request_id"])
    expect((raw.json.error as { message: string }).message).toContain("pass meta.request_id")
    let runs = 0
    const pay = remote.tool(
      { name: "send_payment", binding: { ...binding, requestIdFrom: "order_ref" } },
      async () => ++runs,
    )
    await expect(pay({ order_ref, amount: 1 })).rejects.toMatchObject({
      code: "invalid_request_id",
      status: 400,
    })
    expect(runs).toBe(0)
    expect(storage.size).toBe(0)
    // Within the limit, and with an explicit request id, the same call runs.
    expect(await pay({ order_ref: "ord_1", amount: 1 })).toBe(1)
    expect(await pay({ order_ref, amount: 1 }, { requestId: "pay:order-long" })).toBe(2)
  })
})

describe("integers beyond 2^53", () => {
  const body = (amount: string) =>
    `{"tool":"transfer","args":{"amount_minor":${amount},"to":"acct_1"},"binding":${JSON.stringify(wireBinding)},"meta":{"tool_call_id":"call_42"}}`

  it("the server keys the begin body's arguments exactly, as ledger.tool() keys parseToolArguments'", async () => {
    const { begin, storage } = setup()
    const first = await begin(body("9007199254740993"))
    expect(first.json.status).toBe("run")
    expect(first.json.request_id).toBe(
      await localKey(parseToolArguments('{"amount_minor":9007199254740993,"to":"acct_1"}'), "call_42"),
    )
    expect((await storage.get(first.json.request_id as string))?.kwargs).toMatchObject({
      amount_minor: "9007199254740993",
      to: "acct_1",
    })
    // The neighbouring amount is another call: drift on the reused tool call id, never the first one's replay.
    const second = await begin(body("9007199254740992"))
    expect([second.status, (second.json.error as { code?: string } | undefined)?.code]).toEqual([
      409,
      "args_drift",
    ])
  })

  it("a completion's result is stored as its digits, as ledger.tool() stores a bigint, never rounded", async () => {
    const { app, begin } = setup()
    const run = await begin('{"tool":"t","args":{},"meta":{"request_id":"big"}}')
    const done = await app.request("/v1/calls/big/complete", {
      method: "POST",
      headers: JSON_HEADERS,
      body: `{"fence":${run.json.fence},"lease":"${run.json.lease}","result":{"id":9007199254740993,"n":[1e16,-0,7]}}`,
    })
    expect(done.status).toBe(200)
    expect((await begin('{"tool":"t","args":{},"meta":{"request_id":"big"}}')).json.result).toEqual({
      id: "9007199254740993",
      n: [1e16, 0, 7],
    })
  })

  for (const text of [
    '{"amount_minor": 9007199254740993, "to": "acct_1"}',
    '{"amount_minor": -12345678901234567890, "rate": 1e16, "to": "acct_1"}',
    '{"amount_minor": 5, "delta": -0.0, "to": "acct_1"}',
  ]) {
    it(`RemoteLedger keys ${text} as ledger.tool() does`, async () => {
      const { remote } = setup()
      const args = parseToolArguments(text)
      let id = ""
      await remote.tool({ name: "transfer", binding }, async (_a, tx) => {
        id = tx.requestId
      })(args, { toolCallId: "call_42" })
      expect(id).toBe(await localKey(args, "call_42"))
    })
  }

  // Plain numbers, as a caller writes them: beyond 2^53 the key has the exact integer, not JSON's shortest digits.
  for (const amount of [2 ** 60, -(2 ** 60), 1.2345678901234567e19, 1e21, 1.5e300]) {
    it(`RemoteLedger keys the plain number ${amount} as ledger.tool() does`, async () => {
      const { remote } = setup()
      let id = ""
      await remote.tool({ name: "transfer", binding }, async (_a, tx) => {
        id = tx.requestId
      })({ amount, to: "acct_1" }, { toolCallId: "call_42" })
      expect(id).toBe(await localKey({ amount, to: "acct_1" }, "call_42"))
    })
  }
})

describe("another call's answer, for a call keyed by its tool call id", () => {
  for (const [label, tamper] of [
    [
      "another call's replay",
      () => ({ status: "replay", request_id: "someone-else", result: "their secret" }),
    ],
    ["a run for another request id", (r: Record<string, unknown>) => ({ ...r, request_id: "someone-else" })],
  ] as const) {
    it(`${label} fails closed; the body never runs`, async () => {
      const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
      const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
        const res = await app.fetch(new Request(input, init))
        if (!String(input).endsWith("/v1/calls")) return res
        const real = (await res.json()) as Record<string, unknown>
        return new Response(JSON.stringify(tamper(real)), { headers: JSON_HEADERS })
      }) as typeof globalThis.fetch
      let runs = 0
      const remote = new RemoteLedger({ baseUrl: "http://x", fetch, onWarning: () => {} })
      const t = remote.tool({ name: "pay" }, async () => {
        runs++
        return "paid"
      })
      await expect(t({ amount: 1 }, { toolCallId: "call_1" })).rejects.toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
      expect(runs).toBe(0)
    })
  }
})

describe("renewing a lapsed lease", () => {
  it("answers 409 ledger_lease_expired, as docs/http-api.md says", async () => {
    const { app, begin, clock } = setup()
    const run = (await begin('{"tool":"t","meta":{"request_id":"r1"}}')).json
    clock.advance(61)
    const r = await app.request("/v1/calls/r1/renew", {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ fence: run.fence, lease: run.lease }),
    })
    expect([r.status, ((await r.json()) as { error: { code: string } }).error.code]).toEqual([
      409,
      "ledger_lease_expired",
    ])
  })
})
