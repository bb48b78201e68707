// The ledger on real servers, per backend: round trips per call, the stored row's shape against the Python
// original's payload, rows written by someone else, store-side classification of odd rows, and outages.
import { neon } from "@neondatabase/serverless"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decideClaim, entryFromRow, matchesExpectation, newEntry } from "../../src/adapter-kit.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerIdentityConflictError,
  LedgerPollTimeoutError,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  type TerminalOutcome,
  TerminalOutcome as TerminalOutcomeEnum,
  type TransitionExpectation,
} from "../../src/core/index.ts"
import { DATABASE_URL, runTag, UPSTASH_URL, upstashClient } from "./servers/env.ts"
import { neonPool } from "./servers/neon.ts"
import { storeServices } from "./servers/services.ts"
import { startTcpProxy } from "./servers/tcp-proxy.ts"

const TAG = runTag("ledger").replace(/-/g, "_")
const { pool, tables } = storeServices("ledger")
tables.push(`ledger_ws_${TAG}`, `ledger_http_${TAG}`, `outage_${TAG}`)

// Counts every HTTP request the drivers send (Upstash REST and neon() both use the global fetch).
let httpRequests = 0
const realFetch = globalThis.fetch
globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  httpRequests++
  return realFetch(input, init)
}

interface Harness {
  storage: LedgerStorage
  /** Requests or statements sent so far. */
  roundTrips(): number
  rawRow(id: string): Promise<Record<string, unknown> | null>
  writeRaw(id: string, json: string): Promise<void>
}

const backends: Record<string, () => Promise<Harness>> = {
  upstash: async () => {
    const prefix = `mycelium-test:${TAG}:action:`
    const raw = upstashClient()
    return {
      storage: new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
      roundTrips: () => httpRequests,
      rawRow: async (id) => {
        const v = await raw.eval<[], string | null>("return redis.call('GET', KEYS[1])", [prefix + id], [])
        return v === null ? null : typeof v === "string" ? JSON.parse(v) : (v as Record<string, unknown>)
      },
      writeRaw: async (id, json) => {
        // The original writes the row and its tombstone together.
        await raw.eval(
          "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return 1",
          [prefix + id, `mycelium-test:${TAG}:action-tomb:${id}`],
          [json],
        )
      },
    }
  },
  "neon (WebSocket Pool)": async () => {
    const table = `ledger_ws_${TAG}`
    await new NeonLedgerStorage({ pool, table }).migrate()
    let statements = 0
    const counted = {
      query: (text: string, values?: unknown[]) => {
        statements++
        return pool.query(text, values)
      },
    }
    return {
      storage: new NeonLedgerStorage({ pool: counted, table }),
      roundTrips: () => statements,
      rawRow: async (id) => {
        const { rows } = await pool.query(`SELECT payload::text AS p FROM ${table} WHERE request_id = $1`, [
          id,
        ])
        return rows[0] ? JSON.parse(rows[0].p) : null
      },
      writeRaw: async (id, json) => {
        await pool.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [id, json])
      },
    }
  },
  "neon (HTTP neon() via the /sql emulation)": async () => {
    const table = `ledger_http_${TAG}`
    const sql = neon(DATABASE_URL)
    await new NeonLedgerStorage({ sql, table }).migrate()
    return {
      storage: new NeonLedgerStorage({ sql, table }),
      roundTrips: () => httpRequests,
      rawRow: async (id) => {
        const rows = await sql.query(`SELECT payload::text AS p FROM ${table} WHERE request_id = $1`, [id])
        return rows[0] ? JSON.parse(rows[0].p as string) : null
      },
      writeRaw: async (id, json) => {
        await sql.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [id, json])
      },
    }
  },
}

afterAll(() => {
  globalThis.fetch = realFetch
})

const binding = { agentId: "payments", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" } as const

/** §2.1 of the reference: every key of the original's `LedgerEntry.to_dict()` and its JSON type. */
const PY_FIELDS: Record<string, string[]> = {
  request_id: ["string"],
  tool: ["string"],
  args: ["array"],
  kwargs: ["object"],
  status: ["string"],
  terminal_outcome: ["string"],
  fence: ["integer"],
  result: ["any"],
  error: ["string", "null"],
  started_at: ["number"],
  finished_at: ["number", "null"],
  lease_until: ["number", "null"],
  owner: ["string", "null"],
  idempotency_key: ["string"],
  receipt_ref: ["string", "null"],
  side_effect_boundary: ["string"],
  external_operation_ref: ["string", "null"],
  provider_idempotency_key: ["string", "null"],
  provider_key_first_attempt_at: ["number", "null"],
  last_heartbeat_at: ["number", "null"],
  worker_dead_asserted_by: ["string", "null"],
  worker_dead_asserted_at: ["number", "null"],
  operator_resolution: ["string", "null"],
  resolved_by: ["string", "null"],
  resolution_reason: ["string", "null"],
  resolved_at: ["number", "null"],
  released_from_outcome: ["string", "null"],
  decision_id: ["string", "null"],
  state_ref: ["string", "null"],
  decision: ["object", "null"],
  effect_phase: ["string"],
  effect_protocol_required: ["boolean"],
  effect_id: ["string"],
  schema_version: ["integer"],
  parent_request_id: ["string", "null"],
  handoff_id: ["string", "null"],
}

function jsonType(v: unknown): string {
  if (v === null) return "null"
  if (Array.isArray(v)) return "array"
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number"
  return typeof v
}

function expectPythonShape(row: Record<string, unknown>): void {
  expect(Object.keys(row).sort()).toEqual(Object.keys(PY_FIELDS).sort())
  for (const [k, types] of Object.entries(PY_FIELDS)) {
    const t = jsonType(row[k])
    // JSON cannot tell 1.0 from 1: a float field holding a whole number reads back as an integer everywhere.
    const ok = types.includes("any") || types.includes(t) || (t === "integer" && types.includes("number"))
    expect(ok, `${k}: ${t} not in ${types.join("|")}`).toBe(true)
  }
}

// A row as the Python original's `json.dumps(entry.to_dict())` writes it (default separators, float times).
const pythonRow = (id: string) =>
  `{"request_id": "${id}", "tool": "send_payment", "args": [], "kwargs": {"amount": 100, "recipient": "acct_123", ` +
  `"tool_call_id": "call_py_${id}"}, "status": "completed", "terminal_outcome": "COMPLETED", "fence": 2, "result": ` +
  `{"id": "pi_1", "amount": 100.5}, "error": null, "started_at": 1767225600.123456, "finished_at": 1767225601.5, ` +
  `"lease_until": null, "owner": "host-a:4242", "idempotency_key": "${id}", "receipt_ref": null, ` +
  `"side_effect_boundary": "crossed", "external_operation_ref": "pi_1", "provider_idempotency_key": null, ` +
  `"provider_key_first_attempt_at": null, "last_heartbeat_at": 1767225600.123456, "worker_dead_asserted_by": null, ` +
  `"worker_dead_asserted_at": null, "operator_resolution": null, "resolved_by": null, "resolution_reason": null, ` +
  `"resolved_at": null, "released_from_outcome": null, "decision_id": null, "state_ref": null, "decision": ` +
  `{"allowed": true, "verdicts": [{"name": "amount_cap", "allowed": true, "reason": null}], "denied_reasons": []}, ` +
  `"effect_phase": "COMMITTED", "effect_protocol_required": true, "effect_id": "eff-${id}", "schema_version": 2, ` +
  `"parent_request_id": null, "handoff_id": null}`

const T0 = 1_800_000_000.5
const OUTCOMES = new Set<string>(Object.values(TerminalOutcomeEnum))

/** Odd rows the store must classify exactly as `classifyClaim(entryFromRow(row))` does. */
const ODD_ROWS: Array<[string, Record<string, unknown>]> = [
  ["status-only completed", { status: "completed" }],
  ["status-only failed", { status: "failed" }],
  ["status-only in-flight, lapsed", { status: "in-flight", lease_until: T0 - 1 }],
  ["status-only in-flight, held", { status: "in-flight", lease_until: T0 + 1 }],
  ["status-only in-flight, no lease", { status: "in-flight" }],
  ["null outcome, failed", { status: "failed", terminal_outcome: null }],
  [
    "invalid outcome, in-flight lapsed",
    { status: "in-flight", terminal_outcome: "WEIRD", lease_until: T0 - 5 },
  ],
  ["invalid outcome, odd status", { status: "paused", terminal_outcome: "WEIRD" }],
  [
    "lease as numeric string, lapsed",
    { status: "in-flight", terminal_outcome: "IN_FLIGHT", lease_until: "1799999999" },
  ],
  ["lease as garbage string", { status: "in-flight", terminal_outcome: "IN_FLIGHT", lease_until: "soon" }],
  ["lease as empty string", { status: "in-flight", terminal_outcome: "IN_FLIGHT", lease_until: "" }],
  ["fence as string", { status: "failed", terminal_outcome: "FAILED_BEFORE_EFFECT", fence: "4" }],
  ["fence null", { status: "failed", terminal_outcome: "FAILED_AFTER_EFFECT", fence: null }],
  [
    "EXPIRED stored, lease ahead",
    { status: "in-flight", terminal_outcome: "EXPIRED", lease_until: T0 + 100 },
  ],
  ["BLOCKED lapsed", { status: "failed", terminal_outcome: "BLOCKED", lease_until: T0 - 100 }],
]

for (const [name, make] of Object.entries(backends)) {
  describe(`ledger on ${name}`, () => {
    let h: Harness
    beforeAll(async () => {
      h = await make()
    })

    it("happy path: one round trip per storage operation; claim + completion (+ boundary) per call", async () => {
      const ops: Record<string, number> = {}
      const storage = new Proxy(h.storage, {
        get(target, key) {
          const v: unknown = Reflect.get(target, key)
          if (typeof v !== "function") return v
          return (...args: unknown[]) => {
            ops[String(key)] = (ops[String(key)] ?? 0) + 1
            return (v as (...a: unknown[]) => unknown).apply(target, args)
          }
        },
      })
      const ledger = new ActionLedger({ storage, leaseTtl: 60 })
      const plain = ledger.tool({ name: "charge", binding }, async (a: { n: number }) => ({ ok: a.n }))
      const effect = ledger.tool({ name: "charge_fx", binding }, async (a: { n: number }, tx) =>
        tx.sideEffect(async () => ({ ok: a.n })),
      )
      // First use loads the Lua scripts (EVALSHA → NOSCRIPT → EVAL) and warms connections.
      await plain({ n: -1 }, { toolCallId: `${TAG}-warm-a` })
      await effect({ n: -1 }, { toolCallId: `${TAG}-warm-b` })
      const N = 20
      const measure = async (fn: typeof plain, label: string) => {
        for (const k of Object.keys(ops)) delete ops[k]
        const before = h.roundTrips()
        const t0 = performance.now()
        for (let i = 0; i < N; i++) {
          expect(await fn({ n: i }, { toolCallId: `${TAG}-${label}-${i}` })).toEqual({ ok: i })
        }
        const perOp = Object.fromEntries(Object.entries(ops).map(([k, v]) => [k, v / N]))
        const total = Object.values(perOp).reduce((a, b) => a + b, 0)
        return { trips: (h.roundTrips() - before) / N, ms: (performance.now() - t0) / N, perOp, total }
      }
      const p = await measure(plain, "plain")
      const s = await measure(effect, "fx")
      const before = h.roundTrips()
      expect(await plain({ n: 0 }, { toolCallId: `${TAG}-plain-0` })).toEqual({ ok: 0 })
      const replay = h.roundTrips() - before
      console.log(
        `[round-trips] ${name}: ${p.trips} per call ${JSON.stringify(p.perOp)} ${p.ms.toFixed(2)} ms; ` +
          `with sideEffect() ${s.trips} ${JSON.stringify(s.perOp)} ${s.ms.toFixed(2)} ms; ` +
          `completed redispatch ${replay}`,
      )
      // The adapter's share of the budget: every storage operation is exactly one request / statement.
      expect(p.trips).toBe(p.total)
      expect(s.trips).toBe(s.total)
      // The ledger's share: one claim (carrying the drift siblings, so no follow-up lookup) and one completion
      // write, plus one boundary write for sideEffect().
      expect(p.perOp.findByDispatchId).toBeUndefined()
      expect(p.total).toBe(2)
      expect(s.total).toBe(3)
    })

    it("dispatch siblings come with the claim atomically", async () => {
      const d = `${TAG}-siblings`
      const N = 10
      const results = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          h.storage.tryClaimInflight(
            newEntry({ requestId: `${d}-${i}`, tool: "t", kwargs: { tool_call_id: d, i } }, T0),
            60,
            T0,
            { reclaimFence: null, dispatchId: d },
          ),
        ),
      )
      expect(results.every((r) => r.outcome === "claimed")).toBe(true)
      const sib = results.map((r) => (r.outcome === "claimed" ? r.dispatchSiblings : undefined))
      // Claims of one dispatch id run one after another (a Lua script; a Postgres function behind an advisory
      // lock on the dispatch id), so the k-th claim sees exactly the k-1 before it, never itself.
      expect(sib.map((x) => x?.length ?? -1).sort((a, b) => a - b)).toEqual([...Array(N).keys()])
      for (const [i, x] of sib.entries()) {
        expect(x?.some((e) => e.requestId === `${d}-${i}`)).toBe(false)
      }
      expect((await h.storage.findByDispatchId?.(d))?.map((e) => e.requestId).sort()).toEqual(
        Array.from({ length: N }, (_, i) => `${d}-${i}`).sort(),
      )
    })

    it("one tool-call id re-sent with drifted args by 10 racing workers: one execution, 9 identity conflicts", async () => {
      const d = `${TAG}-drift-race`
      let runs = 0
      // A ledger per caller, as separate workers would have; only the store is shared.
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => {
          const ledger = new ActionLedger({ storage: h.storage, leaseTtl: 60, onWarning: () => {} })
          const charge = ledger.tool({ name: "charge_drift", binding }, async (a: { n: number }) => {
            runs++
            return { ok: a.n }
          })
          return charge({ n: i }, { toolCallId: d })
        }),
      )
      expect(runs).toBe(1)
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1)
      const refused = results.filter((r) => r.status === "rejected")
      expect(refused).toHaveLength(9)
      for (const r of refused) expect(r.reason).toBeInstanceOf(LedgerIdentityConflictError)
    })

    it("a row it writes has exactly the original's field names and JSON value types", async () => {
      const ledger = new ActionLedger({ storage: h.storage, leaseTtl: 60 })
      const send = ledger.tool({ name: "send_payment", binding }, async (a: { amount: number }, tx) =>
        tx.sideEffect(async () => {
          await tx.recordExternalOperation("pi_9")
          return { id: "pi_9", amount: a.amount }
        }),
      )
      const callId = `${TAG}-shape`
      await send({ amount: 12.75 }, { toolCallId: callId })
      const rows = (await h.storage.findByDispatchId?.(callId)) ?? []
      expect(rows).toHaveLength(1)
      const row = await h.rawRow((rows[0] as LedgerEntry).requestId)
      expect(row).not.toBeNull()
      expectPythonShape(row as Record<string, unknown>)
      expect(row).toMatchObject({
        tool: "send_payment",
        status: "completed",
        terminal_outcome: "COMPLETED",
        fence: 1,
        result: { id: "pi_9", amount: 12.75 },
        side_effect_boundary: "crossed",
        external_operation_ref: "pi_9",
        schema_version: 2,
      })
    })

    it("reads a row in the original's format written by someone else", async () => {
      const id = `${TAG}-py-row`
      await h.writeRaw(id, pythonRow(id))
      const e = await h.storage.get(id)
      expect(e).toMatchObject({
        requestId: id,
        tool: "send_payment",
        terminalOutcome: "COMPLETED",
        fence: 2,
        result: { id: "pi_1", amount: 100.5 },
        startedAt: 1767225600.123456,
        finishedAt: 1767225601.5,
        owner: "host-a:4242",
        sideEffectBoundary: "crossed",
        decision: {
          allowed: true,
          verdicts: [{ name: "amount_cap", allowed: true, reason: null }],
          deniedReasons: [],
        },
        effectProtocolRequired: true,
        effectId: `eff-${id}`,
        schemaVersion: 2,
      })
      // A completed row is never claimed again, and the dispatch index finds rows nobody indexed for us.
      const r = await h.storage.tryClaimInflight(
        newEntry({ requestId: id, tool: "send_payment" }, T0),
        60,
        T0,
      )
      expect(r.outcome).toBe("completed")
      expect(r.entry).toEqual(e)
    })

    it("classifies odd and legacy rows exactly as classifyClaim(entryFromRow(row))", async () => {
      for (const [label, fields] of ODD_ROWS) {
        const id = `${TAG}-odd-${label.replace(/\W+/g, "_")}`
        const row = { request_id: id, tool: "t", ...fields }
        await h.writeRaw(id, JSON.stringify(row))
        const stored = entryFromRow(row)
        expect(await h.storage.get(id), label).toEqual(stored)
        for (const [k, options] of [
          undefined,
          { reclaimFence: stored.fence },
          { reclaimFence: null },
        ].entries()) {
          const incoming = newEntry({ requestId: id, tool: "t", owner: "w9" }, T0)
          const want = decideClaim(stored, incoming, 60, T0, options).result.outcome
          // Claim on a copy of the row so each option sees the original state.
          const copy = `${id}-claim${k}`
          await h.writeRaw(copy, JSON.stringify({ ...row, request_id: copy }))
          const got = await h.storage.tryClaimInflight({ ...incoming, requestId: copy }, 60, T0, options)
          expect(got.outcome, `${label} ${JSON.stringify(options)}`).toBe(want)
        }
        // Expectations only ever name real outcomes; an invalid stored one is matched by none of them.
        const own = (
          OUTCOMES.has(String(stored.terminalOutcome)) ? stored.terminalOutcome : "UNKNOWN"
        ) as TerminalOutcome
        const expectations: TransitionExpectation[] = [
          { outcomes: ["IN_FLIGHT"], fence: stored.fence },
          { outcomes: ["COMPLETED", "FAILED_BEFORE_EFFECT", "FAILED_AFTER_EFFECT"], fence: stored.fence },
          { outcomes: [own], fence: stored.fence, leaseHeldAt: T0 },
          { outcomes: [own], fence: stored.fence, effectPhase: "INTENDED" },
          { outcomes: [own], fence: stored.fence + 1 },
        ]
        for (const [i, ex] of expectations.entries()) {
          const copy = `${id}-cas${i}`
          await h.writeRaw(copy, JSON.stringify({ ...row, request_id: copy }))
          const want = matchesExpectation({ ...stored, requestId: copy }, ex)
          const next = newEntry(
            { requestId: copy, tool: "t", terminalOutcome: "COMPLETED", status: "completed" },
            T0,
          )
          expect(await h.storage.tryTransition(next, ex), `${label} CAS ${JSON.stringify(ex)}`).toBe(want)
        }
      }
    })
  })
}

describe("outages on real servers", () => {
  interface Cut {
    storage: LedgerStorage
    cut(): Promise<void>
    restore(): Promise<void>
    close(): Promise<void>
  }

  const outageBackends: Record<string, () => Promise<Cut>> = {
    upstash: async () => {
      const proxy = await startTcpProxy(Number(new URL(UPSTASH_URL).port))
      const redis = upstashClient(`http://127.0.0.1:${proxy.port}`, { retry: false })
      return {
        storage: new UpstashLedgerStorage({ redis, prefix: `mycelium-test:${TAG}:outage:` }),
        cut: () => proxy.stop(),
        restore: () => proxy.start(),
        close: () => proxy.stop(),
      }
    },
    "neon (WebSocket Pool)": async () => {
      const ws = (process.env.NEON_WS_PROXY ?? "127.0.0.1:6543").split(":")
      const proxy = await startTcpProxy(Number(ws[1]), ws[0])
      const cutPool = neonPool(`127.0.0.1:${proxy.port}`, 5)
      const storage = new NeonLedgerStorage({ pool: cutPool, table: `outage_${TAG}` })
      await storage.migrate()
      return {
        storage,
        cut: () => proxy.stop(),
        restore: () => proxy.start(),
        close: async () => {
          await cutPool.end().catch(() => {})
          await proxy.stop()
        },
      }
    },
  }

  for (const [name, make] of Object.entries(outageBackends)) {
    it(`${name}: fails closed while down, no body runs without a durable claim, continues after restart`, async () => {
      const c = await make()
      try {
        const ledger = new ActionLedger({
          storage: c.storage,
          leaseTtl: 30,
          pollInterval: 0.02,
          pollTimeout: 0.5,
        })
        const ran: string[] = []
        let cutInside: string | null = null
        const charge = ledger.tool({ name: "charge", binding }, async (a: { id: string }, tx) => {
          // The claim is durable before the body runs: the row is in the store, IN_FLIGHT under this fence.
          const row = await c.storage.get(tx.requestId)
          expect(row).toMatchObject({ terminalOutcome: "IN_FLIGHT", fence: tx.fence })
          ran.push(a.id)
          if (a.id === cutInside) await c.cut()
          return { charged: a.id }
        })
        const call = (id: string) => charge({ id }, { toolCallId: `${TAG}-${name}-${id}` })
        const before = Array.from({ length: 5 }, (_, i) => `before-${i}`)
        const during = Array.from({ length: 5 }, (_, i) => `during-${i}`)

        for (const id of before) expect(await call(id)).toEqual({ charged: id })

        // The store goes away while a body runs: its completion cannot be written and the caller is told so.
        cutInside = "mid-call"
        await expect(call("mid-call")).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
        expect(ran).toContain("mid-call")

        // While down, every call fails closed and no body runs.
        const ranBefore = ran.length
        const outcomes = await Promise.allSettled(during.map(call))
        for (const o of outcomes) {
          expect(o.status).toBe("rejected")
          expect((o as PromiseRejectedResult).reason).toBeInstanceOf(LedgerStorageUnavailableError)
        }
        expect(ran.length).toBe(ranBefore)

        await c.restore()
        // Nothing lost: completed calls replay their results without running again.
        for (const id of before) expect(await call(id)).toEqual({ charged: id })
        // Calls refused during the outage run now, once.
        for (const id of during) expect(await call(id)).toEqual({ charged: id })
        // The call cut mid-body keeps its lease: a redispatch waits instead of running it a second time.
        await expect(call("mid-call")).rejects.toBeInstanceOf(LedgerPollTimeoutError)
        expect(ran.filter((x) => x === "mid-call")).toHaveLength(1)
        expect(ran.sort()).toEqual([...before, ...during, "mid-call"].sort())
      } finally {
        await c.close()
      }
    }, 60_000)
  }
})
