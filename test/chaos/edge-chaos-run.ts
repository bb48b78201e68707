// The edge chaos run, whatever serves the API: agent processes (RemoteLedger, `ledger:agent` JWTs) call a
// non-idempotent tool while they are SIGKILLed or stalled at random, and the API server itself is SIGKILLed at random
// and started again on the same state: claims, boundaries and completions cut off mid-request, leases lapsing on the
// server's clock while it is down. An operator with a `ledger:operator` JWT answers hard-blocks over the API from the
// provider's own records, as kill-chaos's operator does in process. Afterwards every request id is driven to
// completion and checked against the provider: exactly one effect per id (0 duplicates), and every result any
// caller received is the provider's reference for that id (0 wrong results).
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { SignJWT } from "jose"
import { expect } from "vitest"
import { entryFromRow } from "../../src/adapter-kit.ts"
import {
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerPollTimeoutError,
  leaseLapsed,
  resolvedOutcome,
} from "../../src/core/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { runTag } from "../adapters/servers/env.ts"
import { lines, providerRecords, sleep, stall } from "./chaos-kit.ts"
import { AttemptLog, holderGone, holders, readAttempts } from "./edge-attempts.ts"
import { cutRequests } from "./edge-request-log.ts"
import { exactlyOnceCounts, expectExactlyOnce } from "./exactly-once.ts"

const WORKERS = 4
const CONCURRENCY = 3
const IDS = 100
const MAX_KILLS = 60
const DRAIN_MS = 20_000
const SECRET = "edge-chaos-secret-edge-chaos-secret-0123"

/** What serves the API in a run: a bundled script started as `<port> <secret> <tenant> <requestsLog> <stateDir>`. */
export interface ChaosServer {
  readonly name: string
  readonly bundle: string
  /** Arguments after the common ones. */
  readonly args: readonly string[]
  /**
   * The ledger's rows once the server was killed for the last time: read from `stateDir`, or listed over the API
   * by `serveAgain`, which starts the server once more on that state and kills it after.
   */
  finals(stateDir: string, serveAgain: () => Promise<LedgerEntry[]>): Promise<LedgerEntry[]>
  /** How long the chaos lasts and how often the server dies, sized to how long it takes to boot. */
  readonly pace: {
    readonly chaosMs: number
    /** Up: a kill comes this long after the server is ready, at random in [min, max). */
    readonly upMs: readonly [number, number]
    /** Down: the longest it stays dead before it is started again (its boot adds to it). */
    readonly downMs: number
    /** Kills the run must make, and of them with requests in flight. */
    readonly minKills: number
    readonly minKillsInFlight: number
  }
}

export interface EdgeChaosRun {
  readonly server: ChaosServer
  /** The bundled agent process, edge-worker.ts. */
  readonly agentBundle: string
  /** The run's temporary directory. */
  readonly dir: string
}

/**
 * A port the server is started on again after every kill, so one below Linux's ephemeral range (32768-60999): there,
 * another test's listen(0) or an outgoing connection could take it while the server is down, and the restart fail.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer()
      s.once("error", () => resolve(false))
      s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)))
    })
    if (free) return port
  }
}

const token = (tenant: string, scope: string, sub: string) =>
  new SignJWT({ tenant, scope: `ledger:${scope}`, sub })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("10m")
    .sign(new TextEncoder().encode(SECRET))

/**
 * Starts a bundled process in its own process group (a server may have children: workerd) and resolves once it
 * printed READY (other output, such as a runtime's log, may come first); rejects if it exits first.
 */
function start(bundle: string, args: readonly string[], stderr: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bundle, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  })
  child.stderr?.on("data", (d) => stderr.push(String(d)))
  let out = ""
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (d) => {
      out += String(d)
      if (out.includes("READY\n")) resolve(child)
    })
    child.once("exit", (code) => reject(new Error(`${bundle} exited ${code}: ${stderr.join("")}`)))
  })
}

/** Live (not zombie) processes in process group `pgid`, from /proc. */
function groupMembers(pgid: number): number[] {
  const out: number[] = []
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    } catch {
      continue // gone since the listing
    }
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, the last `)` ends it.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (Number(pgrp) === pgid && state !== "Z") out.push(Number(pid))
  }
  return out
}

/**
 * SIGKILLs the process and its whole group, and waits until none of them is left: a workerd left behind would still
 * hold the Durable Objects' files and serve on its port. A zombie (dead, not yet reaped) holds neither.
 */
async function sigkill(child: ChildProcess): Promise<void> {
  const pgid = child.pid
  if (pgid === undefined) return
  const exited =
    child.exitCode !== null || child.signalCode !== null ? null : new Promise((r) => child.once("exit", r))
  try {
    process.kill(-pgid, "SIGKILL")
  } catch {
    // the group is empty already
  }
  await exited
  for (const until = Date.now() + 5000; groupMembers(pgid).length; await sleep(5))
    if (Date.now() > until) throw new Error(`processes ${groupMembers(pgid).join(", ")} outlived SIGKILL`)
}

/** The server is down (killed, restarting): this pass of the operator is skipped. */
class ServerDown extends Error {}

type Api = (path: string, body?: unknown) => Promise<{ status: number; json: Record<string, unknown> }>

function apiClient(base: string, bearer: string): Api {
  return async (path, body) => {
    let r: Response
    try {
      r = await fetch(`${base}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(5000),
      })
    } catch {
      throw new ServerDown()
    }
    const json = (await r.json().catch(() => ({}))) as Record<string, unknown>
    if (r.status === 503) throw new ServerDown()
    return { status: r.status, json }
  }
}

interface Stats {
  workerKills: number
  workerKillsMidCall: number
  stalls: number
  spawns: number
  serverKills: number
  serverKillsInFlight: number
  /** From spawn to READY, each start of the server. */
  serverBootMs: number[]
  requestsCut: number
  cutByRoute: Record<string, number>
  releasedCompleted: number
  releasedNotExecuted: number
  markedDead: number
  aliveRefusals: number
}

/** Refusals that mean the row moved on since it was listed (completed, reclaimed, released by a racing call). */
const MOVED_ON = new Set(["ledger_already_resolved", "ledger_outcome_already_set", "ledger_release_refused"])

async function allRows(api: Api): Promise<LedgerEntry[]> {
  const rows: LedgerEntry[] = []
  let cursor: string | null = null
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""
    const { status, json } = await api(`/v1/transitions?limit=500${q}`)
    if (status !== 200) throw new Error(`list answered ${status}: ${JSON.stringify(json)}`)
    for (const r of json.transitions as Record<string, unknown>[]) rows.push(entryFromRow(r))
    cursor = json.cursor as string | null
  } while (cursor)
  return rows
}

/**
 * The operator, over the API: settles every stuck row from the provider's records, asserting death only where no
 * one can hold the row's lease any more. Death first, provider second (kill-chaos's operator explains why): rows are
 * listed, then who may hold each lease is read from the attempts log and the kills, then the provider's records.
 * A stalled (SIGSTOPped) agent is alive: for its rows a not_executed release must be refused by the server's gate.
 */
async function operate(
  api: Api,
  files: { provider: string; attempts: string },
  killed: ReadonlySet<string>,
  stats: Stats,
): Promise<void> {
  let rows: LedgerEntry[]
  try {
    rows = await allRows(api)
  } catch (e) {
    if (e instanceof ServerDown) return
    throw e
  }
  const now = Date.now() / 1000
  const dead = new Set(killed)
  const attempts = readAttempts(files.attempts)
  const records = providerRecords(files.provider)
  for (const row of rows) {
    const t = resolvedOutcome(row, now)
    if (t === "COMPLETED" || t === "IN_FLIGHT" || row.operatorResolution) continue
    const id = encodeURIComponent(row.requestId)
    const refs = records.get(row.requestId) ?? []
    const common = {
      by: "edge-chaos-operator",
      reason: `provider shows ${refs.length} charge(s)`,
      expected_fence: row.fence,
    }
    const settle = async (path: string, body: object): Promise<boolean> => {
      const { status, json } = await api(`/v1/transitions/${id}/${path}`, body)
      if (status === 200) return true
      const code = (json.error as { code?: string } | undefined)?.code ?? ""
      if (code === "ledger_worker_alive") stats.aliveRefusals++
      else if (!(status === 409 && MOVED_ON.has(code)))
        throw new Error(`${path} of ${row.requestId} answered ${status}: ${JSON.stringify(json)}`)
      return false
    }
    try {
      if (refs.length > 0) {
        if (await settle("release", { ...common, verified: "completed", result: refs[0] }))
          stats.releasedCompleted++
        continue
      }
      if (
        leaseLapsed(row, now) &&
        row.workerDeadAssertedAt === null &&
        holderGone(attempts, dead, row.requestId, row.fence)
      ) {
        const marked = await settle("mark-worker-dead", {
          ...common,
          reason: "its agent was SIGKILLed, or its call is over",
          override_heartbeat: true,
        })
        if (!marked) continue
        stats.markedDead++
      }
      if (await settle("release", { ...common, verified: "not_executed" })) stats.releasedNotExecuted++
    } catch (e) {
      if (e instanceof ServerDown) return
      throw e
    }
  }
}

export async function edgeChaos({ server: kind, agentBundle, dir }: EdgeChaosRun): Promise<void> {
  const { pace } = kind
  const tag = runTag(`edge-chaos-${kind.name}`)
  const tenant = tag.replace(/[^A-Za-z0-9_.-]/g, "-")
  const stateDir = join(dir, tag)
  mkdirSync(stateDir, { recursive: true })
  const files = {
    provider: join(dir, `${tag}.provider.log`),
    results: join(dir, `${tag}.results.log`),
    attempts: join(dir, `${tag}.attempts.log`),
  }
  for (const f of Object.values(files)) writeFileSync(f, "")
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const agentToken = await token(tenant, "agent", "chaos-agent")
  const operatorApi = apiClient(base, await token(tenant, "operator", "chaos-operator"))
  const stats: Stats = {
    workerKills: 0,
    workerKillsMidCall: 0,
    stalls: 0,
    spawns: 0,
    serverKills: 0,
    serverKillsInFlight: 0,
    serverBootMs: [] as number[],
    requestsCut: 0,
    cutByRoute: {},
    releasedCompleted: 0,
    releasedNotExecuted: 0,
    markedDead: 0,
    aliveRefusals: 0,
  }
  const killed = new Set<string>()
  const live = new Map<string, ChildProcess>()
  const workerStderr: string[] = []
  const serverStderr: string[] = []
  const startedAt = Date.now()
  const booting = new Set<Promise<void>>()
  // Loops still running when the test fails must not spawn or restart anything after the cleanup below.
  let stopped = false
  const loops: Promise<void>[] = []

  let server: ChildProcess | null = null
  let requestsLog = ""
  const startServer = async () => {
    requestsLog = join(dir, `${tag}.requests-${stats.serverBootMs.length}.log`)
    const t = Date.now()
    server = await start(
      kind.bundle,
      [String(port), SECRET, tenant, requestsLog, stateDir, ...kind.args],
      serverStderr,
    )
    stats.serverBootMs.push(Date.now() - t)
  }
  /** `chaos`: a kill of the run, counted; the last one, before the file is read, is not. */
  const killServer = async (chaos = true) => {
    const s = server
    if (!s) return
    server = null
    await sigkill(s)
    if (!chaos) return
    const cut = cutRequests(requestsLog)
    stats.serverKills++
    if (cut.length) stats.serverKillsInFlight++
    stats.requestsCut += cut.length
    for (const route of cut) stats.cutByRoute[route] = (stats.cutByRoute[route] ?? 0) + 1
  }

  const spawnWorker = async () => {
    // Named, not by pid: a reused pid must never inherit a killed agent's death.
    const owner = `edge-w${++stats.spawns}`
    const child = await start(
      agentBundle,
      [
        base,
        agentToken,
        files.provider,
        files.results,
        files.attempts,
        String(IDS),
        String(CONCURRENCY),
        String(startedAt),
        owner,
      ],
      workerStderr,
    )
    live.set(owner, child)
  }
  /** `chaos`: a kill of the run, counted (with whether it held a call); the drain's and cleanup's are not. */
  const killWorker = async (owner: string, chaos = true) => {
    const child = live.get(owner)
    if (!child) return
    live.delete(owner)
    await sigkill(child) // dead for sure before the operator may say so
    killed.add(owner)
    if (!chaos) return
    stats.workerKills++
    // Read after its exit, the log is final for it.
    if (holders(readAttempts(files.attempts)).has(owner)) stats.workerKillsMidCall++
  }

  try {
    await startServer()
    await Promise.all(Array.from({ length: WORKERS }, spawnWorker))
    const stopAt = Date.now() + pace.chaosMs
    // On a loaded machine the server boots slower and agents call less, so fewer kills land where the test needs
    // them: past chaosMs the chaos goes on until it did what the test claims (asserted below), up to twice as long.
    const giveUpAt = stopAt + pace.chaosMs
    const agentsHit = () => stats.workerKills >= 8 && stats.workerKillsMidCall >= 4 && stats.stalls > 0
    const serverHit = () =>
      stats.serverKills >= pace.minKills && stats.serverKillsInFlight >= pace.minKillsInFlight
    const released = () => stats.releasedCompleted + stats.releasedNotExecuted > 0
    // Until the drain only agents write results. CI once saw none: workerd took longer to boot than it stayed up, and
    // every agent was killed or stalled before a call of its own could finish.
    const agentResults = () => lines(files.results).filter((l) => l.startsWith("ok ")).length
    const covered = () => agentsHit() && serverHit() && released() && agentResults() > 0
    // Past chaosMs, a kind of chaos the run has seen enough of stops: the agents then finish calls on the rows the
    // kills left (redispatches, hard-blocks the operator settles), and those results are checked like any other.
    const overtime = (hit: () => boolean) => Date.now() >= stopAt && hit() && released()
    const running = () =>
      !stopped &&
      stats.workerKills < MAX_KILLS &&
      (Date.now() < stopAt || (Date.now() < giveUpAt && !covered()))
    const background = (p: Promise<void>) => {
      booting.add(p)
      void p.finally(() => booting.delete(p))
    }
    const operator = (async () => {
      while (running()) {
        await operate(operatorApi, files, killed, stats)
        await sleep(200)
      }
    })()
    // The server's own crash: killed at random, down (with its boot) long enough for 1 s leases to lapse at times.
    const serverChaos = (async () => {
      while (running()) {
        await sleep(pace.upMs[0] + Math.random() * (pace.upMs[1] - pace.upMs[0]))
        if (!running()) break
        if (overtime(serverHit)) continue
        // Aimed at a request in flight (most are answered within milliseconds, and a kill between them cuts
        // nothing): up to 0.5 s for one to arrive unanswered. Every other kill waits for a write past the claim (a
        // boundary, a completion, a renewal): a claim waiting on a held call is in flight most of the time.
        const aim = stats.serverKills % 2 ? (r: string) => r !== "POST /v1/calls" : () => true
        for (const until = Date.now() + 500; Date.now() < until && !cutRequests(requestsLog).some(aim); )
          await sleep(2)
        await killServer()
        await sleep(Math.random() * pace.downMs)
        await startServer()
      }
    })()
    loops.push(operator, serverChaos)
    while (running()) {
      await sleep(150 + Math.random() * 250)
      // An agent holding a call when there is one: most calls replay in milliseconds, and a kill or stall between
      // them tests little.
      const busy = holders(readAttempts(files.attempts))
      const all = [...live.keys()]
      const owners = all.some((o) => busy.has(o)) ? all.filter((o) => busy.has(o)) : all
      const owner = owners[Math.floor(Math.random() * owners.length)]
      if (owner === undefined || overtime(agentsHit)) continue
      if (Math.random() < 0.4) {
        // A stall, not a death: SIGSTOP past the 1 s lease, then SIGCONT. Its calls go on when it wakes.
        stats.stalls++
        background(stall(() => live.get(owner)))
      } else {
        await killWorker(owner)
        background(spawnWorker()) // replaced in the background: the kills go on while it boots
      }
    }
    await Promise.all(loops)
    // Drain: every agent dies (SIGKILL, so every holder is known gone), then every id is driven to completion.
    await Promise.all(booting)
    for (const owner of [...live.keys()]) await killWorker(owner, false)
    const drainer = new RemoteLedger({
      baseUrl: base,
      token: agentToken,
      leaseTtl: 5,
      pollTimeout: 3,
      requestTimeout: 5,
      onWarning: () => {},
    })
    const drainLog = new AttemptLog(files.attempts, "drainer")
    const binding = {
      agentId: "chaos",
      policyVersion: "1",
      sideEffectClass: "non_idempotent_mutate",
    } as const
    const charge = (id: string) =>
      drainLog.attempt(id, (claimed) =>
        drainer.tool({ name: "charge", binding }, async (_args: { id: string }, tx) => {
          claimed(tx.fence)
          return tx.sideEffect(() => {
            const ref = `ch-drainer-${id}`
            writeFileSync(files.provider, `${id} ${ref}\n`, { flag: "a" })
            return ref
          })
        })({ id }, { requestId: id }),
      )
    // One operator pass at a time: eight drainers blocked at once share it instead of racing their own.
    let pass: Promise<void> | null = null
    const operateOnce = () => {
      pass ??= operate(operatorApi, files, killed, stats).finally(() => {
        pass = null
      })
      return pass
    }
    const drainStart = Date.now()
    const drainUntil = drainStart + DRAIN_MS
    const todo = Array.from({ length: IDS }, (_, i) => `chaos:${i}`)
    const drainOne = async (id: string) => {
      for (;;) {
        try {
          const ref = await charge(id)
          writeFileSync(files.results, `ok ${id} ${ref} drainer\n`, { flag: "a" })
          break
        } catch (e) {
          if (!(e instanceof LedgerHardBlockError || e instanceof LedgerPollTimeoutError)) throw e
          if (Date.now() > drainUntil) throw new Error(`could not drain ${id}: ${String(e)}`)
          await operateOnce()
          await sleep(50)
        }
      }
    }
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let id = todo.shift(); id !== undefined; id = todo.shift()) await drainOne(id)
      }),
    )
    const drainMs = Date.now() - drainStart
    await killServer(false) // its state is read below without it

    const records = providerRecords(files.provider)
    const outcomes = lines(files.results)
      .map((l) => l.split(" "))
      .filter((o) => o.length === 4)
    const oks = outcomes.filter((o) => o[0] === "ok")
    const { duplicates, wrong } = exactlyOnceCounts(records, oks)
    const errors = new Map<string, number>()
    for (const o of outcomes)
      if (o[0] === "err") errors.set(o[2] as string, (errors.get(o[2] as string) ?? 0) + 1)
    const finals = await kind.finals(stateDir, async () => {
      await startServer()
      try {
        return await allRows(operatorApi)
      } finally {
        await killServer(false)
      }
    })
    const boots = [...stats.serverBootMs].sort((a, b) => a - b)
    const summary = {
      server: kind.name,
      chaosMs: drainStart - startedAt,
      drainMs,
      ...stats,
      serverBootMs: { p50: boots[Math.floor(boots.length / 2)], max: boots.at(-1), n: boots.length },
      effects: [...records.values()].reduce((a, r) => a + r.length, 0),
      checkedResults: oks.length,
      agentResults: oks.filter((o) => o[3] !== "drainer").length,
      duplicates: duplicates.length,
      wrongResults: wrong.length,
      errors: Object.fromEntries(errors),
    }
    console.log(`edge-chaos ${JSON.stringify(summary)}`)

    expectExactlyOnce(records, oks, finals, IDS)
    // The run did what it claims: agents killed holding calls, the server killed with requests in flight, real
    // traffic, and hard-blocks settled by the operator over the API.
    expect(stats.workerKills).toBeGreaterThanOrEqual(8)
    expect(stats.workerKillsMidCall).toBeGreaterThanOrEqual(4)
    expect(stats.serverKills).toBeGreaterThanOrEqual(pace.minKills)
    expect(stats.serverKillsInFlight).toBeGreaterThanOrEqual(pace.minKillsInFlight)
    expect(stats.stalls).toBeGreaterThan(0)
    expect(summary.agentResults, "results the agents got").toBeGreaterThan(0)
    expect(stats.releasedCompleted + stats.releasedNotExecuted).toBeGreaterThan(0)
    // No request was a bug (a 500), and a server SIGKILLed inside the file lock, mid-rewrite or mid-commit never
    // left its successor a lock timeout or a corrupt store (the app logs both as storage faults); agents saw only
    // the ledger's own errors (an unmapped refusal, such as a 503 lock timeout, is a RemoteLedgerError).
    expect(serverStderr.join(""), "server errors").not.toMatch(/internal error|storage fault/)
    expect(
      [...errors.keys()].filter((n) => !n.startsWith("Ledger")),
      `unexpected agent errors: ${workerStderr.join("")}`,
    ).toEqual([])
  } finally {
    stopped = true
    await Promise.allSettled([...loops, ...booting])
    for (const owner of [...live.keys()]) await killWorker(owner, false)
    await killServer(false)
  }
}
