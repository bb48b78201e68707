// RemoteLedger through the real worker under `wrangler dev` (workerd, SQLite Durable Objects) on loopback: call
// throughput as a ratio to GET /health of the same worker, with p50/p99. A bounded Node client (fixed concurrency)
// alternates the two loads in rounds, so machine noise hits both alike.
import { type ChildProcess, spawn } from "node:child_process"
import { RemoteLedger } from "../src/edge/client.ts"

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 3000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const PORT = 8790 + Math.floor(Math.random() * 200)
const BASE = `http://127.0.0.1:${PORT}`

function startWrangler(): Promise<ChildProcess> {
  const child = spawn(
    "node_modules/.bin/wrangler",
    [
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(PORT),
      "--show-interactive-dev-session=false",
      "--var",
      "MYCELIUM_ALLOW_UNAUTHENTICATED:true",
      // BENCH_PERSIST_TO=/dev/shm/x puts the Durable Object's SQLite on tmpfs: separates fsync cost from the API's.
      ...(process.env.BENCH_PERSIST_TO ? ["--persist-to", process.env.BENCH_PERSIST_TO] : []),
    ],
    { env: { ...process.env, WRANGLER_SEND_METRICS: "false" }, stdio: ["ignore", "pipe", "pipe"] },
  )
  let out = ""
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev not ready after 60 s:\n${out}`)), 60_000)
    const on = (d: unknown) => {
      out += String(d)
      if (/Ready on/i.test(out)) {
        clearTimeout(timer)
        resolve(child)
      }
    }
    child.stdout?.on("data", on)
    child.stderr?.on("data", on)
    child.once("exit", (code) => reject(new Error(`wrangler dev exited ${code}:\n${out}`)))
  })
}

interface Run {
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
}

async function load(op: (i: number) => Promise<unknown>, ms: number): Promise<Run> {
  const lat: number[] = []
  const end = performance.now() + ms
  let n = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t = performance.now()
        await op(n++)
        lat.push(performance.now() - t)
      }
    }),
  )
  lat.sort((a, b) => a - b)
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? Number.NaN
  return { perSecond: lat.length / (ms / 1000), p50: q(0.5), p99: q(0.99) }
}

const fmt = (r: Run) => `${r.perSecond.toFixed(0)}/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`

const child = await startWrangler()
try {
  const remote = new RemoteLedger({ baseUrl: BASE, onWarning: () => {} })
  const binding = { agentId: "bench", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
  const lookup = remote.tool({ name: "lookup", binding }, async (a: { i: number }) => ({ ok: a.i }))
  const pay = remote.tool({ name: "pay", binding }, async (a: { i: number }, tx) =>
    tx.sideEffect(async () => ({ ok: a.i })),
  )
  const tag = Date.now().toString(36)
  const health = async () => {
    const r = await fetch(`${BASE}/health`)
    await r.arrayBuffer()
  }
  for (let i = 0; i < 50; i++) {
    await health()
    await lookup({ i }, { toolCallId: `${tag}-warm-${i}` })
  }
  await lookup({ i: 0 }, { toolCallId: `${tag}-replay` })

  const loads: Record<string, (i: number) => Promise<unknown>> = {
    "GET /health": health,
    "RemoteLedger call (2 round trips)": (i) =>
      lookup({ i }, { toolCallId: `${tag}-call-${i}-${Math.random()}` }),
    "RemoteLedger call with sideEffect() (3)": (i) =>
      pay({ i }, { toolCallId: `${tag}-pay-${i}-${Math.random()}` }),
    "RemoteLedger replay (1)": () => lookup({ i: 0 }, { toolCallId: `${tag}-replay` }),
  }
  const results: Record<string, Run[]> = {}
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, op] of Object.entries(loads)) {
      const runs = results[name] ?? []
      runs.push(await load(op, ROUND_MS))
      results[name] = runs
    }
  }
  const best = (name: string) => (results[name] ?? []).reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
  const base = best("GET /health")
  console.log(
    `wrangler dev on loopback, ${CONCURRENCY} concurrent, best of ${ROUNDS} x ${ROUND_MS} ms rounds`,
  )
  for (const name of Object.keys(loads)) {
    const r = best(name)
    const ratio =
      name === "GET /health" ? "" : `  ratio to /health ${(r.perSecond / base.perSecond).toFixed(2)}x`
    console.log(`  ${name.padEnd(42)} ${fmt(r)}${ratio}`)
  }
} finally {
  child.kill("SIGTERM")
}
