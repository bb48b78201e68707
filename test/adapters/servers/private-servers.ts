// Private server processes a test may kill and restart: its own redis-server (AOF on) behind its own Upstash REST
// server, and its own PostgreSQL cluster behind its own WebSocket proxy. Each on free loopback ports with its own
// temp dir, so stopping one never touches the shared services (scripts/services.sh) other test files use.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process"
import { accessSync, chownSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client, type ClientConfig, Pool } from "@neondatabase/serverless"
import { SERVICES_HINT } from "./env.ts"
// For its global neonConfig (ws constructor, no TLS, no pipelined connect) the pool below relies on.
import "./neon.ts"

const PGBIN = "/usr/lib/postgresql/15/bin"
const SHIM = fileURLToPath(new URL("../../../scripts/upstash-rest-server.mjs", import.meta.url))
const READY_MS = 15_000
const STOP_MS = 10_000

/** A missing binary fails the test with the fix in the message; under CI as well as locally, never a skip. */
export function requireBinary(path: string, pkg: string): void {
  const found = path.includes("/")
    ? canExec(path)
    : (process.env.PATH ?? "").split(":").some((dir) => dir !== "" && canExec(join(dir, path)))
  if (found) return
  const missing = `${path} is missing (Debian package ${pkg})`
  if (process.env.CI === "true") {
    throw new Error(`${missing}: CI must provide it; scripts/services.sh start installs it when run as root`)
  }
  throw new Error(`${missing}; ${SERVICES_HINT}`)
}

function canExec(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** `n` distinct free loopback ports: all are held open until each is known, so two calls never get the same one. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer()
          s.once("error", reject)
          s.listen(0, "127.0.0.1", () => resolve(s))
        }),
    ),
  )
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port)
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  return ports
}

/** Polls `probe` until it answers true; the deadline bounds a server that never comes up, `child` a dead one. */
async function until(
  what: string,
  probe: () => Promise<boolean>,
  log?: string,
  child?: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + READY_MS
  const tail = () => (log && existsSync(log) ? `\n${readFileSync(log, "utf8").slice(-2000)}` : "")
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before it was ready${tail()}`)
    }
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`${what} did not become ready in ${READY_MS} ms${tail()}`)
}

/** Sends one inline command on a fresh connection and returns what came back before `done` matched. */
function ask(port: number, command: string, done: (reply: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, "127.0.0.1")
    let reply = ""
    const timer = setTimeout(() => sock.destroy(new Error("no reply in 1 s")), 1000)
    sock.on("connect", () => sock.write(`${command}\r\n`))
    sock.on("data", (d) => {
      reply += d.toString()
      if (done(reply)) sock.end()
    })
    sock.on("error", reject)
    sock.on("close", () => {
      clearTimeout(timer)
      resolve(reply)
    })
  })
}

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const sock = net.connect(port, "127.0.0.1")
    sock.on("connect", () => {
      sock.destroy()
      resolve(true)
    })
    sock.on("error", () => resolve(false))
  })

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
  })

async function kill(child: ChildProcess | null, signal: NodeJS.Signals, group = false): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return
  const done = exited(child)
  try {
    // websockify forks a child per connection: the group is every process this test started for it.
    process.kill(group ? -child.pid : child.pid, signal)
  } catch {
    // Exited between the check and the signal.
  }
  await done
}

export interface PrivateUpstash {
  /** The Upstash REST endpoint (the shim), which stays up while Redis is down, as Upstash's does. */
  readonly url: string
  readonly token: string
  readonly redisPort: number
  /** The shim's pid, to show it was never restarted. */
  shimPid(): number | undefined
  /** SIGKILL: no shutdown, no final save; only what AOF (appendfsync always) already has on disk survives. */
  killRedis(): Promise<void>
  /** Same port, same dir: Redis reloads the AOF. Resolves once it has finished loading. */
  startRedis(): Promise<void>
  close(): Promise<void>
}

export async function startPrivateUpstash(): Promise<PrivateUpstash> {
  requireBinary("redis-server", "redis-server")
  const dir = mkdtempSync(join(tmpdir(), "mycelium-redis-"))
  const [redisPort, shimPort] = (await freePorts(2)) as [number, number]
  const token = `token-${process.pid}`
  const log = join(dir, "redis.log")
  let redis: ChildProcess | null = null
  let shim: ChildProcess | null = null

  const startRedis = async () => {
    const args = ["--bind", "127.0.0.1", "--port", String(redisPort), "--dir", dir, "--logfile", log]
    args.push("--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no")
    const child = spawn("redis-server", args, { stdio: "ignore" })
    redis = child
    // Ready means the AOF is loaded (loading:0), not only that the port is open: the rows must be back.
    // And a data command answers: under load, loading:0 was once read before the AOF load began, and the test's
    // first read met "LOADING Redis is loading the dataset in memory".
    await until(
      `redis-server on :${redisPort}`,
      async () =>
        (await ask(redisPort, "INFO persistence", (r) => /loading:\d/.test(r))).includes("loading:0") &&
        (await ask(redisPort, "DBSIZE", (r) => r.includes("\r\n"))).startsWith(":"),
      log,
      child,
    )
  }

  try {
    await startRedis()
    shim = spawn(process.execPath, [SHIM], {
      env: {
        ...process.env,
        SHIM_PORT: String(shimPort),
        SHIM_TOKEN: token,
        REDIS_ADDR: `127.0.0.1:${redisPort}`,
      },
      stdio: "ignore",
    })
    const started = shim
    await until(
      `upstash-rest shim on :${shimPort}`,
      async () => (await fetch(`http://127.0.0.1:${shimPort}/health`)).ok,
      undefined,
      started,
    )
  } catch (e) {
    await kill(shim, "SIGKILL")
    await kill(redis, "SIGKILL")
    rmSync(dir, { recursive: true, force: true })
    throw e
  }

  return {
    url: `http://127.0.0.1:${shimPort}`,
    token,
    redisPort,
    shimPid: () => (shim?.exitCode === null ? shim.pid : undefined),
    killRedis: () => kill(redis, "SIGKILL"),
    startRedis,
    async close() {
      await kill(shim, "SIGKILL")
      await kill(redis, "SIGKILL")
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface PrivatePostgres {
  /** A Neon WebSocket pool through this cluster's own proxy. */
  pool(max?: number): Pool
  readonly port: number
  /** `pg_ctl stop -m immediate`: every server process quits at once, no checkpoint; restart runs crash recovery. */
  stopImmediate(): Promise<void>
  /** Same data dir, same port. Resolves once the server accepts connections. */
  start(): Promise<void>
  close(): Promise<void>
}

/** Postgres tools refuse to run as root: as root, run them as the postgres user, as scripts/services.sh does. */
function pgCommand(bin: string, args: string[]): [string, string[]] {
  const path = join(PGBIN, bin)
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", path, ...args]] : [path, args]
}

function pgRun(bin: string, args: string[]): Promise<void> {
  const [cmd, argv] = pgCommand(bin, args)
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { timeout: READY_MS }, (err, _out, stderr) =>
      err ? reject(new Error(`${bin} ${args.join(" ")} failed: ${err.message}\n${stderr}`)) : resolve(),
    )
  })
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  requireBinary(join(PGBIN, "initdb"), "postgresql")
  requireBinary(join(PGBIN, "pg_ctl"), "postgresql")
  requireBinary(join(PGBIN, "pg_isready"), "postgresql")
  requireBinary("websockify", "websockify")
  const dir = mkdtempSync(join(tmpdir(), "mycelium-pg-"))
  const data = join(dir, "data")
  const [port, wsPort] = (await freePorts(2)) as [number, number]
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString())
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString())
    chownSync(dir, uid, gid)
  }
  let proxy: ChildProcess | null = null
  const pools: Pool[] = []

  const start = async () => {
    // Both on (the shared cluster runs with both off for speed): a commit the server acknowledged must survive the
    // immediate stop. With synchronous_commit off and a slow WAL writer, this test loses completed rows and fails.
    const opts = `-c listen_addresses=127.0.0.1 -p ${port} -k ${data} -c fsync=on -c synchronous_commit=on`
    await pgRun("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-o", opts, "start"])
    const [cmd, argv] = pgCommand("pg_isready", ["-q", "-h", "127.0.0.1", "-p", String(port)])
    const isReady = () =>
      new Promise<boolean>((resolve) => {
        const probe = spawn(cmd, argv, { stdio: "ignore" })
        probe.once("error", () => resolve(false))
        probe.once("exit", (code) => resolve(code === 0))
      })
    await until(`postgres on :${port}`, isReady, join(dir, "server.log"))
  }
  const stopImmediate = async () => {
    await pgRun("pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", String(STOP_MS / 1000), "stop"])
  }

  try {
    // No initdb fsync: the cluster is created before the test; only the server's own writes are under test.
    await pgRun("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
    await start()
    proxy = spawn("websockify", [`127.0.0.1:${wsPort}`, `127.0.0.1:${port}`], {
      stdio: "ignore",
      detached: true,
    })
    await until(`websockify on :${wsPort}`, () => tcpOpen(wsPort), undefined, proxy)
  } catch (e) {
    await kill(proxy, "SIGKILL", true)
    if (existsSync(join(data, "postmaster.pid"))) await stopImmediate().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
    throw e
  }

  return {
    port,
    pool(max = 5) {
      const proxied = `127.0.0.1:${wsPort}`
      // Per pool, so the shared neonConfig.wsProxy (the shared proxy) stays as other test files set it.
      class ProxiedClient extends Client {
        constructor(config?: string | ClientConfig) {
          super(config)
          this.neonConfig.wsProxy = (host, p) => `${proxied}/v1?address=${host}:${p}`
        }
      }
      const pool = new Pool({
        connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
        max,
        connectionTimeoutMillis: 5000,
      })
      pool.Client = ProxiedClient
      // Idle clients die with the server; the next query on the pool reports the outage instead.
      pool.on("error", () => {})
      pools.push(pool)
      return pool
    },
    stopImmediate,
    start,
    async close() {
      await Promise.all(pools.map((p) => p.end().catch(() => {})))
      await kill(proxy, "SIGTERM", true)
      if (existsSync(join(data, "postmaster.pid"))) await stopImmediate().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
