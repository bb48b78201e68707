// AN EMULATION of Neon's HTTP `/sql` endpoint (the protocol the `neon()` function of @neondatabase/serverless
// speaks), running each request against a real Postgres through `pg`. Neon's own proxy is not installable, so this
// lets tests exercise the driver's HTTP path; it is not Neon. Test infrastructure only.
//   POST /sql  {query, params} | {queries: [{query, params}, …]}
//   headers: Neon-Connection-String (required), Neon-Batch-Isolation-Level / -Read-Only / -Deferrable (batches)
//   reply:   {fields: [{name, dataTypeID, …}], rows: [[text | null, …]], command, rowCount}  (batch: {results: […]})
//   errors:  HTTP 400 {message, code, detail, …}
// Usage: NEON_HTTP_PORT=0 node scripts/neon-http-server.mjs  → prints "neon-http emulation on http://127.0.0.1:PORT/sql"
import http from "node:http"
import pg from "pg"

const PORT = Number(process.env.NEON_HTTP_PORT ?? 4444)
const identity = (v) => v
// Raw text output, as Neon's `Neon-Raw-Text-Output: true`: the driver parses values by dataTypeID itself.
const types = { getTypeParser: () => identity }
const pools = new Map()
let requests = 0

function poolFor(connectionString) {
  let pool = pools.get(connectionString)
  if (!pool) {
    pool = new pg.Pool({ connectionString, max: 20 })
    pool.on("error", () => {})
    pools.set(connectionString, pool)
  }
  return pool
}

const ERROR_FIELDS = [
  "severity",
  "code",
  "detail",
  "hint",
  "position",
  "schema",
  "table",
  "column",
  "constraint",
]

function shape(r) {
  return {
    fields: r.fields.map((f) => ({
      name: f.name,
      dataTypeID: f.dataTypeID,
      tableID: f.tableID,
      columnID: f.columnID,
      dataTypeSize: f.dataTypeSize,
      dataTypeModifier: f.dataTypeModifier,
      format: "text",
    })),
    rows: r.rows,
    command: r.command,
    rowCount: r.rowCount,
  }
}

const run = (client, q) => client.query({ text: q.query, values: q.params ?? [], rowMode: "array", types })

async function handle(body, headers) {
  const cs = headers["neon-connection-string"]
  if (!cs) throw Object.assign(new Error("missing Neon-Connection-String header"), { code: "08001" })
  const pool = poolFor(cs)
  if (!Array.isArray(body.queries)) return shape(await run(pool, body))
  const client = await pool.connect()
  try {
    const iso = headers["neon-batch-isolation-level"]
    const level = iso
      ? ` ISOLATION LEVEL ${String(iso)
          .replace(/([a-z])([A-Z])/g, "$1 $2")
          .toUpperCase()}`
      : ""
    const ro = headers["neon-batch-read-only"] === "true" ? " READ ONLY" : ""
    const def = headers["neon-batch-deferrable"] === "true" ? " DEFERRABLE" : ""
    await client.query(`BEGIN${level}${ro}${def}`)
    const results = []
    for (const q of body.queries) results.push(shape(await run(client, q)))
    await client.query("COMMIT")
    return { results }
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {})
    throw e
  } finally {
    client.release()
  }
}

const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", async () => {
    const reply = (status, obj) => {
      const json = JSON.stringify(obj)
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
      res.end(json)
    }
    if (req.method === "GET" && req.url === "/stats") return reply(200, { requests })
    if (req.method !== "POST" || !req.url?.startsWith("/sql"))
      return reply(404, { message: "POST /sql only" })
    requests++
    try {
      reply(200, await handle(JSON.parse(Buffer.concat(chunks).toString("utf8")), req.headers))
    } catch (e) {
      const out = { message: String(e?.message ?? e) }
      for (const k of ERROR_FIELDS) if (e?.[k] !== undefined) out[k] = e[k]
      reply(400, out)
    }
  })
})

server.listen(PORT, "127.0.0.1", () => {
  console.log(`neon-http emulation on http://127.0.0.1:${server.address().port}/sql`)
})
const stop = () => {
  server.close()
  for (const p of pools.values()) p.end().catch(() => {})
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
