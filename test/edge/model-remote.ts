// The ledger's model world (test/core/ledger/model-world.ts) with its workers as RemoteLedger clients of one edge app
// over the run's store: the agent routes, where the server runs the state machine. Each worker is its own client with
// its own agent token; the operator lists, marks dead and releases through the operator routes with an operator
// token. The app's clock is the model's, so the server decides leases on the scheduler's time.
//
// Where RemoteLedger differs from ActionLedger, the model follows docs/http-api.md:
// - Polling: the client waits on real timers (Date.now, setTimeout), the model on its scheduler. So the client gets
//   pollTimeout 0 (its first `poll` answer is LedgerPollTimeoutError) and its fetch does the client's waiting in
//   model time: on a `poll` answer to `POST /v1/calls` it sleeps `retry_after` on the model's clock and sends the same
//   begin again, until another answer or the model's pollTimeout, as ActionLedger's claim loop does.
// - Renewals: no timers (leaseRenewInterval 0, requestTimeout null); a body's renewLease() is a scheduler step. The
//   body's context has no row: the model reads the lease from the store (model-world.ts, #leaseFromRow). A lapsed
//   lease's renewal is a RemoteLedgerError with code `ledger_lease_expired` (no class of its own).
// - No reconciler: the app has none, so a blocked row waits for the operator.
// - Clocks: the server's is the model's. A worker's own clock (ModelOptions.skew: minutes to hours off) counts its
//   poll waits; RemoteLedger itself reads its clocks (Date.now(), performance.now()) only to time its waits and
//   renewals and to refuse an effect once its lease lapsed by them, and sends no time of its own, so a skewed client
//   cannot move a lease (docs/http-api.md: the server's clock decides).
import { entryFromRow } from "../../src/adapter-kit.ts"
import {
  type Clock,
  LedgerAlreadyResolvedError,
  type LedgerEntry,
  LedgerOutcomeAlreadySetError,
  LedgerReleaseRefusedError,
  LedgerWorkerAliveError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { AuthError, type LedgerScope, type Principal } from "../../src/edge/auth.ts"
import { RemoteLedger, RemoteLedgerError } from "../../src/edge/client.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import type { ModelOperator, ModelWorkers, ModelWorkersSetup } from "../core/ledger/model-world.ts"
import { EdgeIntruders, type IntruderTally, MALLORY, TRUDY } from "./model-intruder.ts"

const BASE = "http://edge.model"
const TENANT = "model"

/** The refusals an operator may get, by their documented codes; anything else is a RemoteLedgerError. */
const REFUSALS: Record<string, new (message: string) => Error> = {
  ledger_release_refused: LedgerReleaseRefusedError,
  ledger_already_resolved: LedgerAlreadyResolvedError,
  ledger_worker_alive: LedgerWorkerAliveError,
  ledger_outcome_already_set: LedgerOutcomeAlreadySetError,
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** Requests by route (`POST /v1/calls run`, `... poll`, `POST renew 409`), added to `tally` if given. */
export type RequestTally = Record<string, number>

const routeOf = (method: string, url: string, status: number, text: string): string => {
  const path = new URL(url).pathname
  const route = path === "/v1/calls" ? "calls" : (path.split("/")[4] ?? "transitions")
  const what = status === 200 && route === "calls" ? (JSON.parse(text) as { status: string }).status : status
  return `${method} ${route ?? "transitions"} ${what}`
}

/**
 * `hostile`: hostile agents (model-intruder.ts) act beside the honest workers, their requests counted there. The
 * other tenant's ledger is a store of its own.
 */
export const edgeWorkers = (
  setup: ModelWorkersSetup,
  tally?: RequestTally,
  hostile?: IntruderTally,
): ModelWorkers => {
  const { clock, inFlight } = setup
  // Opaque tokens with scopes (what jwtAuth would verify), so no signature check runs off the event loop and a
  // run repeats from its seed.
  const principals = new Map<string, Principal>()
  const token = (subject: string, scopes: LedgerScope[]): string => {
    const t = `${subject}-token`
    principals.set(`Bearer ${t}`, { tenant: TENANT, subject, scopes: new Set(scopes) })
    return t
  }
  let intruder: EdgeIntruders | null = null
  if (hostile) {
    principals.set(`Bearer ${MALLORY}`, { tenant: TENANT, subject: "mallory", scopes: new Set(["agent"]) })
    principals.set(`Bearer ${TRUDY}`, { tenant: "other", subject: "trudy", scopes: new Set(["agent"]) })
    intruder = new EdgeIntruders({
      seed: setup.seed,
      clock,
      pollInterval: setup.pollInterval,
      tally: hostile,
      fetch: (req) => app.fetch(req),
      track: (p) => inFlight.track(p),
    })
  }
  const storage = intruder ? intruder.guard(setup.storage) : setup.storage
  const otherTenant = new MemoryLedgerStorage()
  const app = createLedgerApp({
    storage: (tenant) => (tenant === TENANT ? storage : otherTenant),
    authenticate: async (authorization) => {
      const p = principals.get(authorization ?? "")
      if (!p) throw new AuthError("unauthorized", "unknown token")
      return p
    },
    clock: { now: () => clock.now() },
    reclaimRequiresDeathSignal: setup.reclaimRequiresDeathSignal,
    // The operator's ledger on the server has the default lease; the model's death rule is 2 × its lease.
    presumedDeadAfter: setup.presumedDeadAfter,
    pollInterval: setup.pollInterval,
  })

  /** `request id#fence` → the lease_until of the server's last answer to that holder (a claim's, a renewal's). */
  const leases = new Map<string, number | null>()
  const noteLease = (a: Answer): void => {
    if (a.status !== 200) return
    const json = JSON.parse(a.text) as { request_id?: unknown; fence?: unknown; lease_until?: unknown }
    const until = json.lease_until
    if (typeof json.fence === "number" && (typeof until === "number" || until === null))
      leases.set(`${json.request_id}#${json.fence}`, until)
  }

  /** One request, counted in flight until its whole answer is read. */
  const send = (input: RequestInfo | URL, init?: RequestInit): Promise<Answer> =>
    inFlight.track(
      (async () => {
        const body = typeof init?.body === "string" ? init.body : null
        const url = String(input)
        const held = intruder && body !== null && /\/v1\/calls\/[^/]+\/[a-z]+$/.test(new URL(url).pathname)
        const pending = app.fetch(new Request(input, init))
        // Hostile requests on the same row, sent while the holder's own is in flight.
        if (held) intruder?.beside(url, body)
        const res = await pending
        const a = { status: res.status, headers: res.headers, text: await res.text() }
        intruder?.saw(url, body, a.status, a.text)
        noteLease(a)
        if (tally) {
          const route = routeOf(init?.method ?? "GET", String(input), a.status, a.text)
          tally[route] = (tally[route] ?? 0) + 1
        }
        return a
      })(),
    )
  const retryAfter = (input: RequestInfo | URL, init: RequestInit | undefined, a: Answer): number | null => {
    if (init?.method !== "POST" || !String(input).endsWith("/v1/calls") || a.status !== 200) return null
    const json = JSON.parse(a.text) as { status?: unknown; retry_after?: unknown }
    return json.status === "poll" && typeof json.retry_after === "number" ? json.retry_after : null
  }
  /** A client's fetch: its poll waits, on its own clock (the model's, or skewed from it: see the top of this file). */
  const fetchOn = (own: Clock) =>
    (async (input: RequestInfo | URL, init?: RequestInit) => {
      const deadline = own.now() + setup.pollTimeout
      for (;;) {
        const a = await send(input, init)
        const wait = retryAfter(input, init, a)
        if (wait === null || own.now() >= deadline)
          return new Response(a.text, { status: a.status, headers: a.headers })
        await own.sleep(wait)
      }
    }) as typeof globalThis.fetch

  const opsToken = `Bearer ${token("ops", ["operator", "reader"])}`
  const ops = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const a = await send(`${BASE}${path}`, {
      method,
      headers: { authorization: opsToken, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const json = JSON.parse(a.text) as T & { error?: { code: string; message: string } }
    if (a.status === 200) return json
    const { code, message } = json.error ?? { code: "http_error", message: a.text }
    const Refusal = REFUSALS[code]
    throw Refusal ? new Refusal(message) : new RemoteLedgerError(a.status, code, message)
  }
  const at = (id: string, action: string) => `/v1/transitions/${encodeURIComponent(id)}/${action}`
  const operator: ModelOperator = {
    async listTransitions() {
      const rows: LedgerEntry[] = []
      let cursor: string | null = null
      do {
        const page: { transitions: Record<string, unknown>[]; cursor: string | null } = await ops(
          "GET",
          `/v1/transitions?stuck=true${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
        )
        for (const row of page.transitions) rows.push(entryFromRow(row))
        cursor = page.cursor
      } while (cursor !== null)
      return rows
    },
    markWorkerDeadFor: (id, o) =>
      ops("POST", at(id, "mark-worker-dead"), {
        by: o.by,
        reason: o.reason,
        override_heartbeat: o.overrideHeartbeat ?? false,
        ...(o.expectedFence !== undefined ? { expected_fence: o.expectedFence } : {}),
      }),
    release: (id, o) =>
      ops("POST", at(id, "release"), {
        verified: o.verified,
        by: o.by,
        reason: o.reason,
        ...(o.result !== undefined ? { result: o.result } : {}),
        ...(o.overrideDeathSignal !== undefined ? { override_death_signal: o.overrideDeathSignal } : {}),
        ...(o.expectedFence !== undefined ? { expected_fence: o.expectedFence } : {}),
      }),
  }

  return {
    operator,
    ...(intruder ? { intruder } : {}),
    granted: (id, fence) => leases.get(`${id}#${fence}`),
    ledger(worker, own) {
      const ledger = new RemoteLedger({
        baseUrl: BASE,
        token: token(worker, ["agent"]),
        fetch: fetchOn(own),
        leaseTtl: setup.leaseTtl,
        leaseRenewInterval: 0,
        pollTimeout: 0,
        requestTimeout: null,
        onWarning: () => {},
      })
      return { tool: (options, fn) => ledger.tool(options, fn) }
    },
  }
}
