// Hostile clients in the edge model (model-remote.ts): agent tokens that speak raw HTTP to the same app, at random
// steps, by a PRNG of their own. `mallory` is an agent of the model's tenant, `trudy` one of another tenant. They
// re-send honest begins (as sent, under the call's id with another binding or drifted arguments, under its tool-call
// id), replay the holder credentials they saw in honest answers (stale, with another fence, in the other tenant) or
// guess them (a row's owner, a random lease), send holder routes beside the holder's own, run calls of their own with
// huge leases and out-of-order holder requests, send malformed bodies and routes their scope does not reach.
//
// What each answer may be is decided from docs/http-api.md (Scopes, Agent routes, Holder routes, Limits, Errors):
// - a holder route without the current (lease, fence) of an IN_FLIGHT row: 409 `ledger_outcome_already_set` (a renewal
//   of a lapsed lease: `ledger_lease_expired`), an unknown id 404 `ledger_unknown_request`;
// - the honest begin re-sent as it was: the documented successes `replay` (the stored result, the same request id) on
//   a COMPLETED row and `poll` on a held one; other states are not tried (that is an honest redispatch, the agents of
//   one tenant being one trust domain);
// - under the call's id with another binding (class, agent, policy version, none): only `replay`, `poll` or `blocked`
//   (`ledger_hard_block`), never `run`; with drifted arguments: 409 `args_drift`;
// - under the call's tool-call id with drifted arguments or another binding: a new request id, so `run` of a row the
//   intruder then holds (a store without the dispatch index), or 409 `args_drift` once the index finds the honest row;
// - the other tenant: its own ledger only (an honest call's id is a new call there; a holder route 404, or 409 on its
//   own row of that id), never the model tenant's result;
// - reader, operator and store routes with an agent token: 403 `forbidden`; bodies: 415, 413, 400 `invalid_json`,
//   `too_deep`, `invalid_body`, `invalid_path`, as the Limits section says.
// Every error is JSON `{ error: { code, message } }`, never a 5xx, never a stack. And no hostile request writes a row
// it does not hold: each write to the model tenant's store is attributed to its request (AsyncLocalStorage), and the
// only one allowed on an honest row is a begin's BLOCKED over a lapsed lease (the hard block the docs give a
// redispatch); the rows a sequential hostile request targets are also compared before and after.
import { AsyncLocalStorage } from "node:async_hooks"
import { seededRandom } from "../../src/conformance/random.ts"
import {
  argsFingerprint,
  type LedgerEntry,
  type LedgerStorage,
  leaseLapsed,
  transitionKey,
} from "../../src/core/index.ts"
import type { Cls, IntruderView, ModelIntruder, SeenCall, ToolName } from "../core/ledger/model-world.ts"
import { CLASS } from "../core/ledger/model-world.ts"
import { pickOne } from "../core/model-kit.ts"

export const MALLORY = "mallory-token"
export const TRUDY = "trudy-token"
const BASE = "http://edge.model"
/** The app's default maxLeaseTtl: no answer may hand out a longer lease. */
const MAX_LEASE = 3600
/** Arguments no honest call sends (honest amounts stay small), so a drifted id never names an honest call's row. */
const FOREIGN_AMOUNT = 10_000
const CLASSES: readonly Cls[] = [
  "non_idempotent_mutate",
  "keyed_mutate",
  "idempotent_mutate",
  "irreversible",
  "read",
]
const SNAKE = /^[a-z]+(_[a-z]+)*$/

/** Requests by what they tried and what came back (`forged complete 409 ledger_outcome_already_set`). */
export type IntruderTally = Record<string, number>

type Json = Record<string, unknown>
interface Answer {
  readonly status: number
  readonly json: Json | null
  /** `200 replay`, `200 blocked ledger_hard_block`, `409 args_drift`, … */
  readonly key: string
}
interface Credential {
  readonly rid: string
  readonly fence: number
  readonly lease: string
}
/** A begin an honest worker sent, as it went out. */
interface Sniffed {
  readonly body: Json
  readonly call: SeenCall
}
/** A binding as the wire carries it: the fields its effect id is derived from. */
interface WireBinding {
  readonly agent_id: string
  readonly policy_version: string
  readonly side_effect_class: Cls
}
interface Context {
  readonly who: "mallory" | "trudy"
  readonly what: string
}

/** One JSON text for equal values, whatever their key order. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Json).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  )
const argsText = (a: { key: string; amount: number }): string => `${a.key}/${a.amount}`
const randomLease = (rand: () => number): string =>
  Array.from(
    { length: 43 },
    () => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[Math.floor(rand() * 64)],
  ).join("")

export interface IntruderSetup {
  readonly seed: number
  readonly clock: { now(): number }
  readonly pollInterval: number
  /** Where the requests are counted, by what they tried and what came back. */
  readonly tally: IntruderTally
  fetch(request: Request): Response | Promise<Response>
  /** Counts a request in flight until its answer is read and checked, so a step waits for it. */
  track<T>(p: Promise<T>): Promise<T>
}

export class EdgeIntruders implements ModelIntruder {
  readonly #rand: () => number
  readonly #setup: IntruderSetup
  readonly #als = new AsyncLocalStorage<Context>()
  #view: IntruderView | null = null
  readonly #sniffed: Sniffed[] = []
  readonly #creds: Credential[] = []
  /** Rows the intruders made and hold or held in the model tenant, and the result each completed with. */
  readonly #own = new Set<string>()
  readonly #ownResults = new Map<string, unknown>()
  /** What trudy completed in her own tenant, by request id. */
  readonly #trudyResults = new Map<string, unknown>()
  #n = 0

  constructor(setup: IntruderSetup) {
    this.#setup = setup
    // Its own sequence: the honest workers' schedule stays the world's.
    this.#rand = seededRandom((setup.seed ^ 0x5eed_1e55) >>> 0)
  }

  attach(view: IntruderView): void {
    this.#view = view
  }

  get #world(): IntruderView {
    if (!this.#view) throw new Error("intruder not attached")
    return this.#view
  }

  // ---- what the intruders see of honest traffic ---------------------------------------------------------------

  /** An honest request and its answer: begins and the credentials `run` answers hand out. */
  saw(url: string, body: string | null, status: number, text: string): void {
    if (!url.endsWith("/v1/calls") || status !== 200 || body === null) return
    const sent = JSON.parse(body) as Json
    const answer = JSON.parse(text) as Json
    const args = sent.args as { key: string; amount: number }
    const ticket = (sent.meta as Json).tool_call_id as string
    const call = this.#world.calls.find(
      (c) => c.tool === sent.tool && c.ticket === ticket && argsText(c.args) === argsText(args),
    )
    if (call && !this.#sniffed.some((s) => s.call === call)) this.#sniffed.push({ body: sent, call })
    if (answer.status === "run")
      this.#creds.push({
        rid: answer.request_id as string,
        fence: answer.fence as number,
        lease: answer.lease as string,
      })
  }

  /**
   * Beside an honest holder request (sent, not yet answered): the other tenant with the very same body (the live
   * credentials), and mallory with the holder's lease at another fence, or a guessed lease at its fence.
   */
  beside(url: string, body: string): void {
    if (this.#rand() >= 0.3) return
    const path = new URL(url).pathname
    const action = path.split("/")[4] ?? ""
    const held = JSON.parse(body) as Json
    const fence = held.fence as number
    void this.#check("beside", "trudy", "POST", path, body, [
      "404 ledger_unknown_request",
      "409 ledger_outcome_already_set",
      "409 ledger_lease_expired",
    ])
    const forged =
      this.#rand() < 0.5
        ? { ...held, fence: fence + (fence > 1 && this.#rand() < 0.5 ? -1 : 1) }
        : { ...held, lease: randomLease(this.#rand) }
    void this.#check(
      `beside/${action}`,
      "mallory",
      "POST",
      path,
      JSON.stringify(forged),
      this.#refusals(action),
    )
  }

  /** The app's store for the model tenant, each write checked against the request that made it. */
  guard(storage: LedgerStorage): LedgerStorage {
    const wrote = (what: string, rid: string, allowed: boolean) => {
      const ctx = this.#als.getStore()
      if (!ctx || allowed || this.#own.has(rid)) return
      this.#world.violate(`${ctx.who} ${ctx.what} ${what} ${rid.slice(0, 8)}, a row it does not hold`)
    }
    const guarded: LedgerStorage = {
      ...(storage.limits ? { limits: storage.limits } : {}),
      get: (id) => storage.get(id),
      list: (o) => storage.list(o),
      set: async (e) => {
        wrote("set", e.requestId, false)
        return storage.set(e)
      },
      tryClaimInflight: async (e, ttl, now, o) => {
        const r = await storage.tryClaimInflight(e, ttl, now, o)
        if (r.outcome === "claimed") wrote("claimed", e.requestId, false)
        return r
      },
      tryTransition: async (next, expect) => {
        const ok = await storage.tryTransition(next, expect)
        // A begin may block a row whose lease lapsed (docs: anything but the result or poll is blocked).
        const blocked = next.terminalOutcome === "BLOCKED" && next.fence === expect.fence
        if (ok) wrote(`moved to ${next.terminalOutcome}`, next.requestId, blocked)
        return ok
      },
    }
    const find = storage.findByDispatchId?.bind(storage)
    if (find) guarded.findByDispatchId = (d) => find(d)
    return guarded
  }

  // ---- one step ---------------------------------------------------------------------------------------------

  async act(): Promise<void> {
    if (this.#rand() >= 0.5) return
    const actions = [
      () => this.#resendExact(),
      () => this.#resendOtherBinding(),
      () => this.#resendDrifted(),
      () => this.#resendTicket(),
      () => this.#forgeHolder(),
      () => this.#forgeHolder(),
      () => this.#trudyHolder(),
      () => this.#trudyBegin(),
      () => this.#malformed(),
      () => this.#outOfScope(),
      () => this.#ownCall(),
    ]
    for (let i = 1 + Math.floor(this.#rand() * 3); i > 0; i--) await this.#pick(actions)()
    // Its own completed rows keep their results (a list store's rows the world checks too).
    for (const [rid, result] of this.#ownResults) {
      const row = await this.#world.store.get(rid)
      if (row?.terminalOutcome !== "COMPLETED" || canonical(row.result) !== canonical(result))
        this.#world.violate(`its own ${rid.slice(0, 8)} changed from ${canonical(result)}`)
    }
  }

  /** The honest begin as it went out, on a row that is COMPLETED (replay) or held (poll). */
  async #resendExact(): Promise<void> {
    const s = this.#sniff()
    const row = s && (await this.#world.store.get(s.call.rid))
    if (!s || !row) return
    const now = this.#setup.clock.now()
    const live = row.terminalOutcome === "IN_FLIGHT" && !leaseLapsed(row, now)
    if (row.terminalOutcome !== "COMPLETED" && !live) return
    const a = await this.#guarded("exact", s.call.rid, "POST", "/v1/calls", s.body, [
      live ? "200 poll" : "200 replay",
    ])
    this.#checkBeginAnswer("exact", a, row)
  }

  /** The call's id with another binding: the row's result, a poll or a hard block, never a run. */
  async #resendOtherBinding(): Promise<void> {
    const s = this.#sniff()
    const row = s && (await this.#world.store.get(s.call.rid))
    if (!s || !row) return
    const { binding, what } = this.#otherBinding(s.call.tool)
    const body: Json = { ...s.body, meta: { ...(s.body.meta as Json), request_id: s.call.rid } }
    if (binding) body.binding = binding
    else delete body.binding
    const a = await this.#guarded(
      `other binding (${what})`,
      s.call.rid,
      "POST",
      "/v1/calls",
      body,
      this.#foreignGate(row),
    )
    this.#checkBeginAnswer(`other binding (${what})`, a, row)
  }

  /** The call's id with drifted arguments: args_drift. */
  async #resendDrifted(): Promise<void> {
    const s = this.#sniff()
    if (!s || !(await this.#world.store.get(s.call.rid))) return
    const args = { ...(s.body.args as Json), amount: FOREIGN_AMOUNT + this.#n++ }
    const body = { ...s.body, args, meta: { ...(s.body.meta as Json), request_id: s.call.rid } }
    await this.#guarded("drifted", s.call.rid, "POST", "/v1/calls", body, ["409 args_drift"])
  }

  /**
   * The call's tool-call id with drifted arguments or another binding, the id derived: a new request id, the
   * intruder's own row (`run`, which it completes), or 409 once the dispatch index finds the honest row.
   */
  async #resendTicket(): Promise<void> {
    const s = this.#sniff()
    if (!s) return
    const { tool, ticket } = s.call
    const drift = this.#rand() < 0.5
    const other = drift ? null : this.#otherBinding(tool)
    const args = drift ? { ...s.call.args, amount: FOREIGN_AMOUNT + this.#n++ } : s.call.args
    const body: Json = { ...s.body, args }
    let rid: string
    if (other && !other.binding) {
      delete body.binding
      rid = ticket
    } else if (other?.binding) {
      const b = other.binding
      body.binding = b
      rid = transitionKey({
        tool,
        binding: {
          agentId: b.agent_id,
          policyVersion: b.policy_version,
          sideEffectClass: b.side_effect_class,
        },
        argsFingerprint: argsFingerprint({ ...args }),
        dispatchId: ticket,
      })
    } else if (tool === "charge") {
      // Named by its business key: the honest row's id, which must be there (else this would be a first claim).
      if (!(await this.#world.store.get(s.call.rid))) return
      await this.#guarded("ticket drifted", s.call.rid, "POST", "/v1/calls", body, ["409 args_drift"])
      return
    } else
      rid = transitionKey({
        tool,
        binding: { agentId: "model", policyVersion: "1", sideEffectClass: CLASS[tool] },
        argsFingerprint: argsFingerprint({ ...args }),
        dispatchId: ticket,
      })
    if (this.#world.calls.some((c) => c.rid === rid)) return
    this.#world.taint(tool, ticket)
    this.#world.foreign(rid)
    this.#own.add(rid)
    const what = `ticket ${drift ? "drifted" : `other binding (${other?.what})`}`
    this.#world.log(`ticket ${tool} ${ticket} -> ${rid.slice(0, 8)}`)
    const mine = this.#ownResults.get(rid)
    const a = await this.#guarded(what, rid, "POST", "/v1/calls", body, [
      "200 run",
      "409 args_drift",
      ...(mine === undefined ? ["200 poll", "200 blocked ledger_hard_block"] : ["200 replay"]),
    ])
    if (a.json?.status === "replay" && canonical(a.json.result) !== canonical(mine))
      this.#world.violate(
        `${what}: replayed ${canonical(a.json.result)}, its own row holds ${canonical(mine)}`,
      )
    if (a.json?.status === "run") {
      if (a.json.request_id !== rid)
        this.#world.violate(`${what}: ran under ${String(a.json.request_id)}, not ${rid}`)
      await this.#completeOwn(rid, a.json)
    }
  }

  /** Holder routes on an honest row (or none) without its current credentials. */
  async #forgeHolder(): Promise<void> {
    const action = this.#pick(["boundary", "complete", "fail", "renew"] as const)
    const rids = [...new Set(this.#world.calls.map((c) => c.rid))]
    if (!rids.length || this.#rand() < 0.1) {
      const id = `nobody-${this.#n++}`
      await this.#guarded(
        `forged ${action}`,
        id,
        "POST",
        at(id, action),
        this.#holderBody(action, 1, randomLease(this.#rand)),
        ["404 ledger_unknown_request"],
      )
      return
    }
    const rid = this.#pick(rids)
    const row = await this.#world.store.get(rid)
    if (!row) return
    const held = row.terminalOutcome === "IN_FLIGHT"
    const mine = this.#creds.filter((c) => c.rid === rid)
    const other = this.#creds.filter((c) => c.rid !== rid)
    const r = this.#rand()
    let fence = row.fence
    let lease: string
    let how: string
    const seen = mine.length ? this.#pick(mine) : null
    if (r < 0.35 && seen) {
      how = "seen"
      lease = seen.lease
      fence = seen.fence
      // The live credentials are the holder's own: only ever sent at another fence.
      if (held && seen.fence === row.fence) {
        how = "seen, other fence"
        fence = row.fence > 1 && this.#rand() < 0.5 ? row.fence - 1 : row.fence + 1
      }
    } else if (r < 0.55 && row.owner) {
      how = "owner"
      lease = this.#rand() < 0.5 ? row.owner : row.owner.replace(/^lease:/, "")
    } else if (r < 0.75 && other.length) {
      how = "another row's"
      lease = this.#pick(other).lease
    } else {
      how = "guessed"
      lease = randomLease(this.#rand)
    }
    await this.#guarded(
      `forged ${action} (${how})`,
      rid,
      "POST",
      at(rid, action),
      this.#holderBody(action, fence, lease),
      this.#refusals(action),
    )
  }

  /** The other tenant with the live credentials it saw: its own ledger has no such claim. */
  async #trudyHolder(): Promise<void> {
    if (!this.#creds.length) return
    const c = this.#pick(this.#creds)
    const action = this.#pick(["boundary", "complete", "fail", "renew"] as const)
    await this.#guarded(
      `trudy ${action}`,
      c.rid,
      "POST",
      at(c.rid, action),
      this.#holderBody(action, c.fence, c.lease),
      ["404 ledger_unknown_request", "409 ledger_outcome_already_set", "409 ledger_lease_expired"],
      "trudy",
    )
  }

  /** The other tenant sends an honest begin: a call of its own tenant, never the model tenant's result. */
  async #trudyBegin(): Promise<void> {
    const s = this.#sniff()
    if (!s) return
    const a = await this.#guarded(
      "trudy begin",
      s.call.rid,
      "POST",
      "/v1/calls",
      s.body,
      ["200 run", "200 replay", "200 blocked ledger_hard_block", "409 args_drift"],
      "trudy",
    )
    const rid = a.json?.request_id as string | undefined
    if (a.json?.status === "replay") {
      const result = a.json.result as Json | null
      if (canonical(result) !== canonical(this.#trudyResults.get(rid ?? "")))
        this.#world.violate(`trudy got ${canonical(result)} for ${rid}, not her own tenant's result`)
    }
    if (a.json?.status === "run" && rid) {
      const result = { tenant: "other", n: this.#n++ }
      const done = await this.#check(
        "trudy complete",
        "trudy",
        "POST",
        at(rid, "complete"),
        JSON.stringify({ fence: a.json.fence, lease: a.json.lease, result }),
        ["200"],
      )
      if (done.status === 200) this.#trudyResults.set(rid, result)
    }
  }

  /** Bodies the Limits section refuses, on a begin or a holder route of an honest row. */
  async #malformed(): Promise<void> {
    const s = this.#sniff()
    const cred = this.#creds.length ? this.#pick(this.#creds) : null
    const rid = cred?.rid ?? s?.call.rid ?? "nobody"
    const path =
      this.#rand() < 0.5 || !cred
        ? "/v1/calls"
        : at(rid, this.#pick(["boundary", "complete", "fail", "renew"]))
    const begin = path === "/v1/calls"
    const valid = begin
      ? JSON.stringify(s?.body ?? { tool: "probe", args: {} })
      : JSON.stringify({ fence: 1, lease: randomLease(this.#rand), result: {} })
    const json = { "content-type": "application/json" }
    const cases: [string, Record<string, string>, string | Uint8Array, string[]][] = [
      ["text/plain", { "content-type": "text/plain" }, valid, ["415 unsupported_media_type"]],
      ["no content-type", {}, valid, ["415 unsupported_media_type"]],
      ["not JSON", json, `${valid.slice(0, -1)},}`, ["400 invalid_json"]],
      ["truncated", json, valid.slice(0, Math.floor(valid.length / 2)), ["400 invalid_json"]],
      ["not UTF-8", json, new Uint8Array([123, 34, 0xff, 0xfe, 34, 58, 49, 125]), ["400 invalid_json"]],
      ["oversized", json, `{"tool":"${"x".repeat(1024 * 1024)}"}`, ["413 payload_too_large"]],
      ["deep", json, `${"[".repeat(200)}${"]".repeat(200)}`, ["400 too_deep"]],
      ["array", json, "[]", ["400 invalid_body"]],
      ["U+0000", json, valid.replace(/^\{/, '{"x\\u0000":1,'), ["400 invalid_body"]],
      ["lone surrogate", json, valid.replace(/^\{/, '{"x":"\\ud800",'), ["400 invalid_body"]],
      ["__proto__", json, valid.replace(/^\{/, '{"__proto__":{"fence":1},'), ["400 invalid_body"]],
      ["unknown field", json, valid.replace(/^\{/, '{"poll_timeout":99999,"now":0,'), ["400 invalid_body"]],
      [
        "bad numbers",
        json,
        begin
          ? JSON.stringify({ ...(JSON.parse(valid) as Json), lease_ttl: this.#pick([-1, 0, "60"]) })
          : JSON.stringify({ fence: 1.5, lease: "short", result: {} }),
        ["400 invalid_body"],
      ],
    ]
    // Duplicate keys: JSON.parse keeps the last, and so does the server's exact reading of `args`.
    if (cred && !begin)
      cases.push([
        "duplicate keys",
        json,
        `{"fence":${cred.fence},"lease":${JSON.stringify(randomLease(this.#rand))},"lease":${JSON.stringify(cred.lease.slice(0, 20))},"fence":${cred.fence + 1},"result":{}}`,
        this.#refusals(path.split("/")[4] ?? ""),
      ])
    const [what, headers, body, allowed] = this.#pick(cases)
    await this.#guarded(
      `malformed ${what} ${begin ? "begin" : "holder"}`,
      rid,
      "POST",
      path,
      body,
      allowed,
      "mallory",
      headers,
    )
    if (this.#rand() < 0.3) {
      // Raw path steps: "." and its encodings are resolved away by URL parsing; an overlong id, U+0000 and bytes that
      // are no UTF-8 reach the route.
      const id = this.#pick([".", "..", "%2E", "%2e%2E", "x".repeat(600), "a%00b", "%ED%A0%80"])
      await this.#guarded(
        `bad id ${id.slice(0, 8)}`,
        rid,
        "POST",
        `/v1/calls/${id}/complete`,
        JSON.stringify({ fence: 1, lease: randomLease(this.#rand), result: {} }),
        // Percent-escapes that decode to no UTF-8 are kept as their literal text by the router: an unknown id.
        [
          "400 invalid_path",
          "404 not_found",
          ...(id.startsWith("%ED") ? ["404 ledger_unknown_request"] : []),
        ],
      )
    }
  }

  /** Reader, operator and store routes with an agent token, of either tenant. */
  async #outOfScope(): Promise<void> {
    const rid = this.#world.calls.length ? this.#pick(this.#world.calls).rid : "nobody"
    const routes: [string, string, unknown][] = [
      ["GET", "/v1/transitions?stuck=true", undefined],
      ["GET", `/v1/transitions/${encodeURIComponent(rid)}`, undefined],
      [
        "POST",
        `/v1/transitions/${encodeURIComponent(rid)}/release`,
        { verified: "not_executed", reason: "mine now" },
      ],
      [
        "POST",
        `/v1/transitions/${encodeURIComponent(rid)}/mark-worker-dead`,
        { reason: "x", override_heartbeat: true },
      ],
      ["GET", "/v1/receipts", undefined],
      ["POST", "/v1/receipts/verify", {}],
      ["GET", "/v1/rows?prefix=", undefined],
      ["GET", `/v1/rows/${encodeURIComponent(rid)}`, undefined],
      ["PUT", `/v1/rows/${encodeURIComponent(rid)}`, { request_id: rid }],
      ["POST", `/v1/rows/${encodeURIComponent(rid)}/claim`, { entry: {}, lease_ttl: 1e9 }],
      ["GET", "/v1/dispatch/call_0", undefined],
    ]
    const [method, path, body] = this.#pick(routes)
    const who = this.#rand() < 0.7 ? "mallory" : "trudy"
    const text = body === undefined ? null : JSON.stringify(body)
    await this.#guarded(
      `scope ${method} ${path.split("/")[2]}${path.split("/")[4] ? `/${path.split("/")[4]}` : ""}`,
      rid,
      method,
      path,
      text,
      ["403 forbidden"],
      who,
    )
  }

  /**
   * A call of mallory's own, asking for a lease the server must cap, then holder requests in a random order, some
   * twice or at a wrong fence, each answered as the row's state allows. It always ends completed.
   */
  async #ownCall(): Promise<void> {
    const rid = `mallory-${this.#n++}`
    this.#world.foreign(rid)
    this.#own.add(rid)
    const cls = this.#pick([...CLASSES, null])
    const body: Json = {
      tool: "probe",
      args: { n: this.#n },
      ...(cls ? { binding: { agent_id: "mallory", policy_version: "1", side_effect_class: cls } } : {}),
      meta: { request_id: rid, tool_call_id: `x_${rid}` },
      lease_ttl: this.#pick([1e9, 1e300, MAX_LEASE + 0.5, 0.001, 30]),
    }
    const a = await this.#guarded("own begin", rid, "POST", "/v1/calls", body, ["200 run"])
    if (a.json?.status !== "run") return
    const lease = a.json.lease as string
    const fence = a.json.fence as number
    let state: "IN_FLIGHT" | "COMPLETED" | "failed" = "IN_FLIGHT"
    for (let i = 1 + Math.floor(this.#rand() * 5); i > 0; i--) {
      const action = this.#pick(["boundary", "complete", "fail", "renew", "stale", "race"] as const)
      if (action === "race" && state === "IN_FLIGHT") {
        state = await this.#race(rid, fence, lease)
        continue
      }
      if (action === "race") continue
      if (action === "stale") {
        const act = this.#pick(["boundary", "complete", "fail", "renew"] as const)
        await this.#check(
          `own ${act} at fence ${fence + 1}`,
          "mallory",
          "POST",
          at(rid, act),
          JSON.stringify(this.#holderBody(act, fence + 1, lease)),
          this.#refusals(act),
        )
        continue
      }
      const ok = state === "IN_FLIGHT"
      const result = { intruder: rid }
      const b = await this.#check(
        `own ${action}${ok ? "" : " after the end"}`,
        "mallory",
        "POST",
        at(rid, action),
        JSON.stringify(
          action === "complete" ? { fence, lease, result } : this.#holderBody(action, fence, lease),
        ),
        ok
          ? ["200"]
          : ["409 ledger_outcome_already_set", ...(action === "renew" ? ["409 ledger_lease_expired"] : [])],
      )
      if (b.status !== 200 || !b.json) continue
      this.#leaseWithinGrant(`own ${action}`, b.json)
      if (action === "complete") {
        state = "COMPLETED"
        this.#ownResults.set(rid, result)
      } else if (action === "fail") state = "failed"
    }
    if (state === "IN_FLIGHT") await this.#completeOwn(rid, a.json)
    // A completed call's begin again: the documented replay of the same binding, with its result.
    const done = this.#ownResults.get(rid)
    if (done !== undefined) {
      const r = await this.#check("own replay", "mallory", "POST", "/v1/calls", JSON.stringify(body), [
        "200 replay",
      ])
      if (r.json?.status === "replay" && canonical(r.json.result) !== canonical(done))
        this.#world.violate(`own replay gave ${canonical(r.json.result)}, not ${canonical(done)}`)
    }
  }

  /**
   * Two endings of its own call at once with its own credentials (a retry beside the first send): exactly one is
   * stored, the other answered 409, and the row holds the one that won.
   */
  async #race(rid: string, fence: number, lease: string): Promise<"COMPLETED" | "failed"> {
    const second = this.#pick(["complete", "fail"] as const)
    const ending = (action: "complete" | "fail", n: number) =>
      this.#check(
        `own race ${action}`,
        "mallory",
        "POST",
        at(rid, action),
        JSON.stringify(
          action === "complete"
            ? { fence, lease, result: { intruder: rid, n } }
            : { fence, lease, error: "raced", boundary: "crossed" },
        ),
        ["200", "409 ledger_outcome_already_set"],
      )
    const answers = await Promise.all([ending("complete", 1), ending(second, 2)])
    const won = answers.filter((a) => a.status === 200)
    if (won.length !== 1) this.#world.violate(`own race: ${won.length} of two endings stored`)
    const row = await this.#world.store.get(rid)
    const first = answers[0]?.status === 200
    const result = first ? { intruder: rid, n: 1 } : { intruder: rid, n: 2 }
    if (first || second === "complete") {
      if (row?.terminalOutcome !== "COMPLETED" || canonical(row.result) !== canonical(result))
        this.#world.violate(
          `own race: row ${row?.terminalOutcome} ${canonical(row?.result)}, the winner sent ${canonical(result)}`,
        )
      this.#ownResults.set(rid, result)
      return "COMPLETED"
    }
    if (row?.terminalOutcome === "COMPLETED")
      this.#world.violate("own race: the failure won, yet the row is COMPLETED")
    return "failed"
  }

  async #completeOwn(rid: string, run: Json): Promise<void> {
    this.#leaseWithinGrant("run", run)
    const result = { intruder: rid }
    const c = await this.#check(
      "own complete",
      "mallory",
      "POST",
      at(rid, "complete"),
      JSON.stringify({ fence: run.fence, lease: run.lease, result }),
      ["200"],
    )
    if (c.status === 200) this.#ownResults.set(rid, result)
  }

  /** A lease an answer reports lapses within maxLeaseTtl of the server's now, and its lease_ttl is at most that. */
  #leaseWithinGrant(what: string, a: Json): void {
    const now = this.#setup.clock.now()
    const until = a.lease_until as number | null | undefined
    const ttl = a.lease_ttl as number | undefined
    if (ttl !== undefined && !(ttl > 0 && ttl <= MAX_LEASE)) this.#world.violate(`${what}: lease_ttl ${ttl}`)
    if (a.terminal_outcome !== undefined && a.terminal_outcome !== "IN_FLIGHT") return
    if (typeof until !== "number" || !(until > now - 1e-9 && until <= now + MAX_LEASE + 1e-6))
      this.#world.violate(`${what}: lease_until ${String(until)} at ${now}, max ${MAX_LEASE} s`)
  }

  // ---- requests and their checks ------------------------------------------------------------------------------

  /** What a foreign-binding begin may get on this row (docs: the row's result or poll; anything else blocked). */
  #foreignGate(row: LedgerEntry): string[] {
    if (row.terminalOutcome === "COMPLETED") return ["200 replay"]
    if (row.terminalOutcome === "IN_FLIGHT" && !leaseLapsed(row, this.#setup.clock.now())) return ["200 poll"]
    return ["200 blocked ledger_hard_block"]
  }

  #checkBeginAnswer(what: string, a: Answer, row: LedgerEntry): void {
    if (
      a.json?.status === "replay" &&
      (a.json.request_id !== row.requestId || canonical(a.json.result) !== canonical(row.result))
    )
      this.#world.violate(
        `${what}: replayed ${canonical(a.json)} for ${row.requestId}, the row holds ${canonical(row.result)}`,
      )
    if (a.json?.status === "poll" && a.json.retry_after !== this.#setup.pollInterval)
      this.#world.violate(`${what}: poll retry_after ${String(a.json.retry_after)}`)
  }

  #refusals(action: string): string[] {
    return [
      "409 ledger_outcome_already_set",
      ...(action === "renew" ? ["409 ledger_lease_expired"] : []),
      // A guessed lease outside the 16-128 characters the API takes.
      "400 invalid_body",
    ]
  }

  #holderBody(action: string, fence: number, lease: string): Json {
    const held = { fence, lease }
    if (action === "complete") return { ...held, result: { ref: "forged" } }
    if (action === "fail") return { ...held, error: "forged", boundary: "crossed" }
    if (action === "boundary") return { ...held, boundary: "crossed", external_operation_ref: "forged" }
    return { ...held, lease_ttl: 1e9 }
  }

  #otherBinding(tool: ToolName): { binding: WireBinding | null; what: string } {
    const r = this.#rand()
    const base: WireBinding = { agent_id: "model", policy_version: "1", side_effect_class: CLASS[tool] }
    if (r < 0.2) return { binding: null, what: "none" }
    if (r < 0.4) return { binding: { ...base, policy_version: "2" }, what: "policy 2" }
    if (r < 0.6) return { binding: { ...base, agent_id: "mallory" }, what: "agent mallory" }
    const cls = this.#pick(CLASSES.filter((c) => c !== CLASS[tool]))
    return { binding: { ...base, side_effect_class: cls }, what: cls }
  }

  /**
   * One sequential request against the model tenant: its answer checked, every write it makes attributed to it,
   * and the row it names the same after it, but for the BLOCKED a begin may write over a lapsed lease.
   */
  async #guarded(
    what: string,
    rid: string,
    method: string,
    path: string,
    body: Json | string | Uint8Array | null,
    allowed: string[],
    who: Context["who"] = "mallory",
    headers: Record<string, string> = { "content-type": "application/json" },
  ): Promise<Answer> {
    const store = this.#world.store
    const before = await store.get(rid)
    const text =
      body === null || typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body)
    const a = await this.#check(what, who, method, path, text, allowed, headers)
    const after = await store.get(rid)
    if (this.#own.has(rid) && who === "mallory") return a
    if (canonical(before) !== canonical(after)) {
      const blocked =
        before?.terminalOutcome === "IN_FLIGHT" &&
        leaseLapsed(before, this.#setup.clock.now()) &&
        after?.terminalOutcome === "BLOCKED" &&
        after.fence === before.fence &&
        a.key === "200 blocked ledger_hard_block"
      if (!blocked)
        this.#world.violate(
          `${who} ${what} changed ${rid.slice(0, 8)} from ${before?.terminalOutcome}/${before?.fence} to ${after?.terminalOutcome}/${after?.fence}`,
        )
    }
    return a
  }

  /** Sends one request as `who`; the answer must be one of `allowed` (`200` for any success of a holder route). */
  async #check(
    what: string,
    who: Context["who"],
    method: string,
    path: string,
    body: string | Uint8Array | null,
    allowed: string[],
    headers: Record<string, string> = { "content-type": "application/json" },
  ): Promise<Answer> {
    const init: RequestInit = {
      method,
      headers: { ...headers, authorization: `Bearer ${who === "mallory" ? MALLORY : TRUDY}` },
      ...(body === null ? {} : { body: body as BodyInit }),
    }
    return this.#setup.track(this.#answer(what, who, path, init, allowed))
  }

  async #answer(
    what: string,
    who: Context["who"],
    path: string,
    init: RequestInit,
    allowed: string[],
  ): Promise<Answer> {
    const res = await this.#als.run({ who, what }, async () =>
      this.#setup.fetch(new Request(`${BASE}${path}`, init)),
    )
    const text = await res.text()
    let json: Json | null = null
    try {
      json = JSON.parse(text) as Json
    } catch {}
    const a = { status: res.status, json, key: answerKey(res.status, json) }
    const label = `${who === "trudy" && !what.startsWith("trudy") ? "trudy " : ""}${what}`
    const tally = this.#setup.tally
    tally[`${label} ${a.key}`] = (tally[`${label} ${a.key}`] ?? 0) + 1
    this.#world.log(`${label}: ${a.key}`)
    const error = json?.error as Json | undefined
    if (res.status >= 500) this.#world.violate(`${label}: ${res.status} ${text.slice(0, 200)}`)
    else if (res.status !== 200) {
      if (typeof error?.code !== "string" || !SNAKE.test(error.code) || typeof error.message !== "string")
        this.#world.violate(`${label}: ${res.status} without a JSON error: ${text.slice(0, 200)}`)
      else if (/\n\s+at /.test(error.message))
        this.#world.violate(`${label}: a stack in ${error.message.slice(0, 200)}`)
    }
    if (!allowed.includes(a.key) && !(allowed.includes("200") && res.status === 200))
      this.#world.violate(
        `${label}: answered ${a.key} (${text.slice(0, 160)}), expected ${allowed.join(" | ")}`,
      )
    return a
  }

  #sniff(): Sniffed | null {
    return this.#sniffed.length ? this.#pick(this.#sniffed) : null
  }

  #pick<T>(xs: readonly T[]): T {
    return pickOne(this.#rand, xs)
  }
}

const at = (id: string, action: string): string => `/v1/calls/${encodeURIComponent(id)}/${action}`

function answerKey(status: number, json: Json | null): string {
  if (status === 200 && typeof json?.status === "string") {
    const code = (json.error as Json | undefined)?.code
    return `200 ${json.status}${typeof code === "string" ? ` ${code}` : ""}`
  }
  if (status === 200) return "200"
  const code = (json?.error as Json | undefined)?.code
  return `${status} ${typeof code === "string" ? code : "?"}`
}
