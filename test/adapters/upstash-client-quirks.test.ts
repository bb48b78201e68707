// The Upstash stores against the real @upstash/redis client's own behaviours (node_modules/@upstash/redis,
// HttpClient.request), on the real REST shim and Redis:
// 1. a client built with a plain `signal` answers an aborted request with a FAKE 200 whose result is the abort
//    reason: never a success, a lost race or an endless scan, always a typed error, and no body runs;
// 2. the client resends a request whose answer was lost after Redis ran it: a resent claim, compare-and-set, task
//    swap or receipt append answers what its first run did (one body run, one completion, one receipt);
// 3. the client options a user may set each work: one body run per call, replays return the stored result;
// 4. a server answering valid JSON of the wrong shape to a script is an outage, never a ledger decision.
import { Redis, type RedisConfigNodejs } from "@upstash/redis"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { UpstashLedgerStorage, UpstashReplyError } from "../../src/adapters/upstash.ts"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { ActionLedger, LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../../src/receipts.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { requireUpstash, runTag, UPSTASH_TOKEN, UPSTASH_URL } from "./servers/env.ts"
import { type PrivateUpstash, startPrivateUpstash } from "./servers/private-servers.ts"
import { type RestFaultProxy, startRestFaultProxy } from "./servers/rest-fault-proxy.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const T0 = 1_800_000_000.5
const uid = (label: string) => `${runTag(label)}-${Math.random().toString(36).slice(2, 8)}`
type ClientOptions = Omit<RedisConfigNodejs, "url" | "token">

function client(url: string, options: ClientOptions = {}, token = UPSTASH_TOKEN): Redis {
  return new Redis({ url, token, enableTelemetry: false, ...options })
}

/** The client with a cap on SCAN pages: a scan that follows a fake cursor fails here instead of spinning forever. */
function boundedScans(redis: Redis, max = 50): Redis {
  let pages = 0
  return new Proxy(redis, {
    get(target, prop) {
      if (prop !== "scan") return Reflect.get(target, prop)
      return (...args: Parameters<Redis["scan"]>) => {
        if (++pages > max)
          throw new Error(`scan followed ${max} pages: a fake cursor was taken for a real one`)
        return target.scan(...args)
      }
    },
  })
}

/** Every ledger, task and receipt store call on one client; each must reject. */
function storeCalls(redis: Redis, tag: string): Array<[string, () => Promise<unknown>]> {
  const ledger = new UpstashLedgerStorage({ redis, prefix: `mycelium-test:${tag}:action:` })
  const tasks = new UpstashTaskStore({ redis, prefix: `mycelium-test:${tag}:task:` })
  const receipts = new UpstashReceiptStore({ redis, prefix: `mycelium-test:${tag}:receipts:` })
  const entry = newEntry({ requestId: "r", tool: "t", kwargs: { tool_call_id: "c" } }, T0)
  const drain = async (it: AsyncIterable<unknown>) => {
    for await (const _ of it);
  }
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: receipts, agentId: "a" })
  return [
    ["ledger get", () => ledger.get("r")],
    ["ledger set", () => ledger.set({ ...entry, fence: 1 })],
    ["ledger claim", () => ledger.tryClaimInflight(entry, 60, T0, { reclaimFence: null, dispatchId: "c" })],
    ["ledger compare-and-set", () => ledger.tryTransition(entry, { outcomes: ["IN_FLIGHT"], fence: 0 })],
    ["ledger findByDispatchId", () => ledger.findByDispatchId("c")],
    ["ledger list", () => drain(ledger.list())],
    ["task get", () => tasks.get("r")],
    ["task swap", () => tasks.swap("r", null, { row: taskRow("r"), lease: null })],
    ["task list", () => drain(tasks.list())],
    ["receipt list", () => receipts.list()],
    ["receipt listPage", () => receipts.listPage()],
    [
      "receipt append",
      () => emitter.emit({ action: "t", actionKind: "tool", requestId: "r", status: "completed" }),
    ],
  ]
}

function taskRow(id: string) {
  return {
    request_id: id,
    task: "t",
    args: [],
    kwargs: {},
    status: "in-flight" as const,
    result: null,
    error: null,
    started_at: T0,
    finished_at: null,
  }
}

/** What a call did: resolved (with what) or the error's class name. */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    return `resolved ${JSON.stringify(await call())?.slice(0, 80)}`
  } catch (e) {
    return e instanceof Error ? e.constructor.name : typeof e
  }
}

beforeAll(requireUpstash)

describe("1. a client with a plain AbortSignal answers an aborted request with a fake 200", () => {
  // Auto-pipelining (the default) turns the fake body into the client's own TypeError; without it the fake result
  // reaches the adapter, base64-decoded (the default encoding) or as the reason itself.
  const variants: Array<[string, ClientOptions]> = [
    ["auto-pipelined (default)", {}],
    ["no auto-pipelining", { enableAutoPipelining: false }],
    ["no auto-pipelining, responseEncoding false", { enableAutoPipelining: false, responseEncoding: false }],
    [
      "no auto-pipelining, automaticDeserialization false",
      { enableAutoPipelining: false, automaticDeserialization: false },
    ],
  ]
  const reasons: Array<[string, () => unknown]> = [
    ["no reason (an AbortError DOMException)", () => undefined],
    ["a string reason", () => "user cancelled"],
    ["an Error reason", () => new Error("gave up")],
  ]
  for (const [variant, options] of variants) {
    for (const [why, reason] of reasons) {
      it(`${variant}, ${why}: every store call rejects, typed; the ledger, task and tool bodies never run`, async () => {
        const ac = new AbortController()
        ac.abort(reason())
        const redis = boundedScans(client(UPSTASH_URL, { ...options, signal: ac.signal }))
        const tag = runTag("abort")
        const pipelined = !("enableAutoPipelining" in options)
        const calls = storeCalls(redis, tag)
        const seen = await Promise.all(calls.map(async ([name, call]) => `${name}: ${await outcome(call)}`))
        // Pipelined, the client itself throws (res.map is not a function) before the adapter sees a reply, and
        // so does SCAN's own parser on a null result: the ledger wraps those like any outage. Every other fake
        // result reaches the adapter, which must name it.
        for (const s of seen)
          expect(s).toMatch(
            pipelined || /^\w+ list:/.test(s) ? /: (TypeError|UpstashReplyError)$/ : /: UpstashReplyError$/,
          )
        expect(seen).toHaveLength(12)

        const storage = new UpstashLedgerStorage({ redis, prefix: `mycelium-test:${tag}:action:` })
        const ledger = new ActionLedger({ storage, leaseTtl: 60, pollTimeout: 1, onWarning: () => {} })
        let runs = 0
        const tool = ledger.tool({ name: "pay", binding }, async (a: { n: number }) => {
          runs++
          return a.n
        })
        await expect(tool({ n: 1 }, { toolCallId: uid("c") })).rejects.toBeInstanceOf(
          LedgerStorageUnavailableError,
        )
        await expect(ledger.get("r")).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
        await expect(ledger.listTransitions()).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
        const tasks = new TaskLedger({
          storage: new UpstashTaskStore({ redis, prefix: `mycelium-test:${tag}:task:` }),
          onWarning: () => {},
        })
        const job = tasks.task({ name: "job" }, async () => {
          runs++
          return 1
        })
        await expect(job({ day: 1 })).rejects.toThrow()
        expect(runs).toBe(0)
      })
    }
  }
})

/** A command of one of the stores' Lua scripts (EVALSHA, or EVAL after NOSCRIPT). */
const isScript = (c: string[]) => c[0] === "evalsha" || c[0] === "eval"
const scriptArgs = (cmds: string[][]) => cmds.filter(isScript).flatMap((c) => c.map(String))

describe("2. the client resends a request whose answer was lost after Redis ran it", () => {
  let server: PrivateUpstash
  let proxy: RestFaultProxy
  beforeAll(async () => {
    server = await startPrivateUpstash()
    proxy = await startRestFaultProxy(server.url)
    // Loads every script into this Redis's cache first, so a cut request is one Redis ran, never a NOSCRIPT.
    const redis = client(server.url, {}, server.token)
    const storage = new UpstashLedgerStorage({ redis, prefix: "warm:action:" })
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    await ledger.tool({ name: "w", binding }, async (_a: object, tx) => tx.sideEffect(async () => 1))({}, {})
    await storage.set({ ...newEntry({ requestId: "w", tool: "t" }, T0), fence: 9 })
    await storage.findByDispatchId("w")
    const tasks = new TaskLedger({ storage: new UpstashTaskStore({ redis, prefix: "warm:task:" }) })
    await tasks.task({ name: "w" }, async () => 1)({})
    const store = new UpstashReceiptStore({ redis, prefix: "warm:receipts:" })
    await new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "w" }).emit({
      action: "t",
      actionKind: "tool",
      requestId: "w",
      status: "completed",
    })
  }, 30_000)
  afterAll(async () => {
    await proxy?.close()
    await server?.close()
  })
  afterEach(() => {
    proxy.onRequest = () => "relay"
    // Each cut request ran in Redis (a NOSCRIPT answer would mean nothing landed and nothing was tested).
    for (const r of proxy.cutReplies.splice(0)) expect(r).not.toMatch(/error/i)
  })

  /** Cuts, once each, the first request whose script arguments `pick` matches. */
  function cutOnce(...picks: Array<(args: string[]) => boolean>) {
    const left = [...picks]
    proxy.onRequest = (cmds) => {
      const args = scriptArgs(cmds)
      const i = left.findIndex((p) => args.length > 0 && p(args))
      if (i < 0) return "relay"
      left.splice(i, 1)
      return "cut"
    }
    return () => left.length
  }

  const ledgerOn = () => {
    const prefix = `mycelium-test:${runTag("resend")}:action:`
    const storage = new UpstashLedgerStorage({ redis: client(proxy.url, {}, server.token), prefix })
    return new ActionLedger({
      storage,
      leaseTtl: 60,
      pollTimeout: 2,
      pollInterval: 0.05,
      onWarning: () => {},
    })
  }
  const claimArgs = (a: string[]) => a.some((s) => s.endsWith('"fence":'))
  const rowWith = (text: string) => (a: string[]) => a.some((s) => s.includes(text))

  const cases: Array<[string, Array<(a: string[]) => boolean>]> = [
    ["the claim", [claimArgs]],
    ["the completion", [rowWith('"terminal_outcome":"COMPLETED"')]],
    ["the maybe-crossed boundary", [rowWith('"side_effect_boundary":"maybe_crossed"')]],
    [
      "the claim, the boundary and the completion",
      [
        claimArgs,
        rowWith('"side_effect_boundary":"maybe_crossed"'),
        rowWith('"terminal_outcome":"COMPLETED"'),
      ],
    ],
  ]
  for (const [what, picks] of cases) {
    it(`${what}: the call returns its result, the body ran once, the row is COMPLETED at fence 1`, async () => {
      const ledger = ledgerOn()
      let runs = 0
      const pay = ledger.tool({ name: "pay", binding }, async (a: { n: number }, tx) =>
        tx.sideEffect(async () => {
          runs++
          return a.n * 10
        }),
      )
      const cutsBefore = proxy.cuts
      const left = cutOnce(...picks)
      const toolCallId = uid("call")
      expect(await pay({ n: 4 }, { toolCallId })).toBe(40)
      expect(left()).toBe(0)
      expect(proxy.cuts - cutsBefore).toBe(picks.length)
      proxy.onRequest = () => "relay"
      expect(await pay({ n: 4 }, { toolCallId })).toBe(40)
      expect(runs).toBe(1)
      const rows = await ledger.listTransitions()
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({ terminalOutcome: "COMPLETED", fence: 1, result: 40 })
    })
  }

  it("task claim and completion swaps: the task returns, its body ran once, the row is completed", async () => {
    const prefix = `mycelium-test:${runTag("resend")}:task:`
    const tasks = new TaskLedger({
      storage: new UpstashTaskStore({ redis: client(proxy.url, {}, server.token), prefix }),
      pollTimeout: 2,
      pollInterval: 0.05,
      onWarning: () => {},
    })
    let runs = 0
    const job = tasks.task({ name: "report" }, async (a: { day: number }) => {
      runs++
      return a.day + 1
    })
    const swap = (a: string[]) => a.some((s) => s.includes('"task":"report"'))
    const left = cutOnce(
      (a) => swap(a) && a.some((s) => s.includes('"status":"in-flight"')),
      (a) => swap(a) && a.some((s) => s.includes('"status":"completed"')),
    )
    expect(await job({ day: 6 })).toBe(7)
    expect(left()).toBe(0)
    proxy.onRequest = () => "relay"
    expect(await job({ day: 6 })).toBe(7)
    expect(runs).toBe(1)
    const all = await tasks.list()
    expect(all).toHaveLength(1)
    expect(all[0]?.row).toMatchObject({ status: "completed", result: 7 })
    expect(all[0]?.lease).toMatchObject({ fence: 1 })
  })

  it("receipt appends, chained: each receipt is in the log once and the chain verifies", async () => {
    const prefix = `mycelium-test:${runTag("resend")}:receipts:`
    const store = new UpstashReceiptStore({ redis: client(proxy.url, {}, server.token), prefix })
    const signer = hmacReceiptSigner("k")
    const emitter = new ReceiptEmitter({ signer, store, agentId: "a" })
    for (let i = 0; i < 3; i++) {
      const left = cutOnce((a) => a.some((s) => new RegExp(`"request_id": ?"r${i}"`).test(s)))
      await emitter.emit({ action: "t", actionKind: "tool", requestId: `r${i}`, status: "completed" })
      expect(left()).toBe(0)
    }
    proxy.onRequest = () => "relay"
    const all = await store.list()
    expect(all.map((r) => [r.request_id, r.chain?.seq])).toEqual([
      ["r0", 0],
      ["r1", 1],
      ["r2", 2],
    ])
    expect(await verifyReceipts(all, { hmac: "k" }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: all.length,
    })
  })

  // Only a write marks its call: a resend of a call that lost must lose again, never answer "written".
  it("a compare-and-set and a task swap that lost, cut and resent: each still loses, nothing written", async () => {
    const redis = client(proxy.url, {}, server.token)
    const storage = new UpstashLedgerStorage({ redis, prefix: `mycelium-test:${runTag("lost")}:action:` })
    const e = newEntry({ requestId: uid("lost"), tool: "t", kwargs: { tool_call_id: "c" } }, T0)
    const claimed = await storage.tryClaimInflight(e, 60, T0)
    expect(claimed).toMatchObject({ outcome: "claimed", entry: { fence: 1 } })
    const done = { ...claimed.entry, terminalOutcome: "COMPLETED" as const, status: "completed" as const }
    let sent = 0
    const cas = rowWith('"terminal_outcome":"COMPLETED"')
    let left = cutOnce(cas)
    const pick = proxy.onRequest
    proxy.onRequest = (cmds, path) => {
      if (cas(scriptArgs(cmds))) sent++
      return pick(cmds, path)
    }
    // A stale fence: the first run answers 0 and its answer is cut; the resend must answer 0 too.
    expect(await storage.tryTransition(done, { outcomes: ["IN_FLIGHT"], fence: 7 })).toBe(false)
    expect([left(), sent]).toEqual([0, 2])
    expect(await storage.get(e.requestId)).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: 1 })

    const tasks = new UpstashTaskStore({ redis, prefix: `mycelium-test:${runTag("lost")}:task:` })
    const row = {
      task: "t",
      request_id: "q",
      args: [],
      kwargs: {},
      status: "in-flight" as const,
      result: null,
    }
    const first = await tasks.swap("q", null, { row: { ...row, started_at: T0 } as never, lease: null })
    expect(first).toMatch(/^v[0-9a-f]{40}$/)
    left = cutOnce((a) => a.some((s) => s.includes('"status":"completed"')))
    const stale = `v${"0".repeat(40)}`
    expect(
      await tasks.swap("q", stale, {
        row: { ...row, status: "completed", started_at: T0 } as never,
        lease: null,
      }),
    ).toBeNull()
    expect(left()).toBe(0)
    expect(await tasks.get("q")).toMatchObject({ version: first, row: { status: "in-flight" } })
  })

  it("set(): a resent upsert writes the same row again (harmless without a marker)", async () => {
    const prefix = `mycelium-test:${runTag("resend")}:action:`
    const storage = new UpstashLedgerStorage({ redis: client(proxy.url, {}, server.token), prefix })
    const e = { ...newEntry({ requestId: uid("set"), tool: "t" }, T0), fence: 3 }
    let sent = 0
    const left = cutOnce(rowWith(`"request_id":"${e.requestId}"`))
    const pick = proxy.onRequest
    proxy.onRequest = (cmds, path) => {
      if (rowWith(`"request_id":"${e.requestId}"`)(scriptArgs(cmds))) sent++
      return pick(cmds, path)
    }
    await storage.set(e)
    expect(left()).toBe(0)
    // The cut request and its resend both reached Redis (the script was loaded by the earlier tests).
    expect(sent).toBe(2)
    proxy.onRequest = () => "relay"
    expect(await storage.get(e.requestId)).toMatchObject({ fence: 3, terminalOutcome: "IN_FLIGHT" })
  })
})

describe("3. client options a user may set", () => {
  const variants: Array<[string, ClientOptions]> = [
    ["automaticDeserialization: false", { automaticDeserialization: false }],
    ["automaticDeserialization: true", { automaticDeserialization: true }],
    ["responseEncoding: false", { responseEncoding: false }],
    ["readYourWrites: false", { readYourWrites: false }],
    ["retry: false", { retry: false }],
    ["enableAutoPipelining: false", { enableAutoPipelining: false }],
  ]
  for (const [name, options] of variants) {
    it(`${name}: one body run per call under a race, replays return the stored result, tasks and receipts work`, async () => {
      const tag = runTag("opts")
      const redis = () => client(UPSTASH_URL, options)
      const prefix = `mycelium-test:${tag}:action:`
      const ledgers = [0, 1].map(
        () =>
          new ActionLedger({
            storage: new UpstashLedgerStorage({ redis: redis(), prefix }),
            leaseTtl: 60,
            pollInterval: 0.02,
            onWarning: () => {},
          }),
      )
      let runs = 0
      const tools = ledgers.map((l) =>
        l.tool({ name: "pay", binding }, async (a: { n: number }, tx) =>
          tx.sideEffect(async () => {
            runs++
            await new Promise((r) => setTimeout(r, 30))
            return { paid: a.n, at: "2026-12-04" }
          }),
        ),
      )
      const toolCallId = uid("call")
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (tools[i % 2] as (typeof tools)[0])({ n: 5 }, { toolCallId })),
      )
      for (const r of results) expect(r).toEqual({ paid: 5, at: "2026-12-04" })
      expect(runs).toBe(1)
      const rows = await (ledgers[1] as ActionLedger).listTransitions()
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({ terminalOutcome: "COMPLETED", fence: 1 })
      expect(await (ledgers[0] as ActionLedger).get(rows[0]?.requestId ?? "")).toMatchObject({ fence: 1 })

      const tasks = new TaskLedger({
        storage: new UpstashTaskStore({ redis: redis(), prefix: `mycelium-test:${tag}:task:` }),
        onWarning: () => {},
      })
      let taskRuns = 0
      const job = tasks.task({ name: "job" }, async () => ++taskRuns)
      expect([await job({ d: 1 }), await job({ d: 1 })]).toEqual([1, 1])
      expect(await tasks.list()).toHaveLength(1)

      const store = new UpstashReceiptStore({ redis: redis(), prefix: `mycelium-test:${tag}:receipts:` })
      const signer = hmacReceiptSigner("k")
      const emitter = new ReceiptEmitter({ signer, store, agentId: "a" })
      for (const r of ["r1", "r2"])
        await emitter.emit({ action: "t", actionKind: "tool", requestId: r, status: "completed" })
      const all = await store.list()
      expect(all.map((r) => r.chain?.seq)).toEqual([0, 1])
      expect(await verifyReceipts(all, { hmac: "k" }, { requireChain: true })).toMatchObject({
        ok: true,
        valid: all.length,
      })
    })
  }
})

describe("4. a server answering a script with valid JSON of the wrong shape", () => {
  let proxy: RestFaultProxy
  beforeAll(async () => {
    proxy = await startRestFaultProxy(UPSTASH_URL)
  })
  afterAll(() => proxy?.close())

  const shapes: Array<[string, unknown]> = [
    ['{"result": {…}}', { result: { outcome: "claimed" } }],
    ['{"result": 7}', { result: 7 }],
    ['{"result": -1}', { result: -1 }],
    ['{"result": "garbage"}', { result: "garbage" }],
    ['{"result": ["claimed", "x", 0]}', { result: ["claimed", "x", 0] }],
    ['{"error": …} with 200', { error: "ERR injected" }],
  ]
  for (const [name, body] of shapes) {
    it(`${name}: every script call rejects, typed; a tool call fails closed before its body`, async () => {
      proxy.onRequest = (cmds, path) => {
        if (!cmds.length || !cmds.every(isScript)) return "relay"
        return { reply: path.startsWith("/pipeline") ? cmds.map(() => body) : body }
      }
      const tag = runTag("shape")
      for (const options of [
        {},
        { enableAutoPipelining: false, responseEncoding: false },
      ] as ClientOptions[]) {
        const redis = client(proxy.url, options)
        const scripted = storeCalls(redis, tag).filter(
          ([n]) => !/get$|list|listPage/.test(n) || n === "task get",
        )
        expect(scripted.map(([n]) => n)).toEqual([
          "ledger set",
          "ledger claim",
          "ledger compare-and-set",
          "ledger findByDispatchId",
          "task get",
          "task swap",
          "receipt append",
        ])
        for (const [n, call] of scripted) {
          const seen = `${n}: ${await outcome(call)}`
          // set's own answers are integers: -1 (written) or the newer stored fence, which it refuses typed.
          const own = n === "ledger set" && typeof (body as { result?: unknown }).result === "number"
          // The client raises an `error` field itself (UpstashError); any other shape is the adapter's to refuse.
          const expected = own
            ? /: (resolved undefined|LedgerStaleFenceError)$/
            : "error" in (body as object)
              ? /: UpstashError$/
              : /: UpstashReplyError$/
          expect(seen).toMatch(expected)
        }
        const storage = new UpstashLedgerStorage({ redis, prefix: `mycelium-test:${tag}:action:` })
        const ledger = new ActionLedger({ storage, leaseTtl: 60, pollTimeout: 1, onWarning: () => {} })
        let runs = 0
        const tool = ledger.tool({ name: "pay", binding }, async () => ++runs)
        await expect(tool({}, { toolCallId: uid("c") })).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
        expect(runs).toBe(0)
      }
    })
  }

  it("a claim answered 'claimed' with a fence that is no number, or ghost flag 7, is refused", async () => {
    // Unencoded, so the reply reaches the adapter as written (base64 would garble "claimed").
    const redis = client(proxy.url, { responseEncoding: false })
    const storage = new UpstashLedgerStorage({ redis, prefix: `x:${runTag("f")}:` })
    for (const reply of [
      ["claimed", "NaN", 0],
      ["claimed", "0", 0],
      ["claimed", "1", 7],
      ["claimed", "1", 0, "sibling-without-row"],
    ]) {
      proxy.onRequest = (cmds, path) =>
        cmds.every(isScript)
          ? { reply: path.startsWith("/pipeline") ? [{ result: reply }] : { result: reply } }
          : "relay"
      await expect(
        storage.tryClaimInflight(newEntry({ requestId: "r", tool: "t" }, T0), 60, T0),
      ).rejects.toBeInstanceOf(UpstashReplyError)
    }
  })
})
