// A local server for the Upstash REST protocol (POST /, /pipeline, /multi-exec) in front of a real Redis,
// so @upstash/redis is tested against real Redis semantics (Lua, MULTI, errors). Test infrastructure only.
import http from "node:http"
import net from "node:net"

const PORT = Number(process.env.SHIM_PORT ?? 8079),
  TOKEN = process.env.SHIM_TOKEN ?? "local-token"
const [RHOST, RPORT] = (process.env.REDIS_ADDR ?? "127.0.0.1:6379").split(":")
class RespError {
  constructor(m) {
    this.message = m
  }
}
function parse(buf, off) {
  // one RESP2 value → [value, next] | null (incomplete)
  if (off >= buf.length) return null
  const eol = buf.indexOf("\r\n", off)
  if (eol < 0) return null
  const t = buf[off],
    line = buf.toString("utf8", off + 1, eol),
    next = eol + 2
  switch (t) {
    case 0x2b:
      return [{ status: line }, next]
    case 0x2d:
      return [new RespError(line), next]
    case 0x3a:
      return [Number(line), next]
    case 0x24: {
      const n = Number(line)
      if (n < 0) return [null, next]
      if (buf.length < next + n + 2) return null
      return [buf.subarray(next, next + n), next + n + 2]
    }
    case 0x2a: {
      const n = Number(line)
      if (n < 0) return [null, next]
      const a = []
      let o = next
      for (let i = 0; i < n; i++) {
        const r = parse(buf, o)
        if (!r) return null
        a.push(r[0])
        o = r[1]
      }
      return [a, o]
    }
    default:
      throw new Error("bad RESP type")
  }
}
const encodeCmd = (args) =>
  Buffer.concat([
    Buffer.from(`*${args.length}\r\n`),
    ...args.flatMap((a) => {
      const b = Buffer.from(a, "utf8")
      return [Buffer.from(`$${b.length}\r\n`), b, Buffer.from("\r\n")]
    }),
  ])
// Redis went away (stopped, restarting): answered 503, as the Upstash endpoint answers while its database is down.
class Unavailable {
  constructor(m) {
    this.message = m
  }
}
// One connection at a time, FIFO replies; a MULTI..EXEC block is one write. When Redis closes it, the requests
// still waiting on it get Unavailable and the next request connects again, so the shim outlives a Redis restart
// instead of hanging (a killed Redis closes the socket without an error, so nothing else would answer them).
let conn = null
function connect() {
  const sock = net.createConnection({ host: RHOST, port: Number(RPORT) })
  sock.setNoDelay(true)
  const c = { sock, waiting: [], acc: Buffer.alloc(0), error: "" }
  sock.on("data", (d) => {
    c.acc = c.acc.length ? Buffer.concat([c.acc, d]) : d
    let off = 0
    for (;;) {
      const r = parse(c.acc, off)
      if (!r) break
      off = r[1]
      c.waiting.shift()(r[0])
    }
    c.acc = c.acc.subarray(off)
  })
  sock.on("error", (e) => {
    c.error = e.message
  })
  const gone = () => {
    if (conn === c) conn = null
  }
  sock.on("end", gone)
  sock.on("close", () => {
    gone()
    const lost = new Unavailable(`ERR redis at ${RHOST}:${RPORT} unavailable${c.error ? `: ${c.error}` : ""}`)
    for (const w of c.waiting.splice(0)) w(lost)
  })
  return c
}
conn = connect()
const send = (cmds) => {
  conn ??= connect()
  const c = conn
  const ps = cmds.map(() => new Promise((r) => c.waiting.push(r)))
  c.sock.write(Buffer.concat(cmds.map(encodeCmd)))
  return ps
}
const lostIn = (vs) => vs.find((v) => v instanceof Unavailable)
const toArg = (a) =>
  typeof a === "string" ? a : typeof a === "number" || typeof a === "boolean" ? String(a) : JSON.stringify(a)
const enc = (v, b64) =>
  v === null
    ? null
    : Buffer.isBuffer(v)
      ? v.toString(b64 ? "base64" : "utf8")
      : Array.isArray(v)
        ? v.map((x) => enc(x, b64))
        : v && typeof v === "object" && "status" in v
          ? v.status
          : v
const wrap = (v, b64) => (v instanceof RespError ? { error: v.message } : { result: enc(v, b64) })
const body = (req) =>
  new Promise((ok, ko) => {
    const c = []
    req.on("data", (d) => c.push(d))
    req.on("end", () => ok(Buffer.concat(c).toString("utf8")))
    req.on("error", ko)
  })
const reply = (res, s, o) => {
  const j = JSON.stringify(o)
  res.writeHead(s, { "content-type": "application/json", "content-length": Buffer.byteLength(j) })
  res.end(j)
}
const isCmd = (c) => Array.isArray(c) && c.length > 0
http
  .createServer(async (req, res) => {
    try {
      if (req.method === "GET" && req.url === "/health") return reply(res, 200, { result: "ok" })
      if ((req.headers.authorization ?? "") !== `Bearer ${TOKEN}`)
        return reply(res, 401, { error: "Unauthorized" })
      if (req.method !== "POST") return reply(res, 405, { error: "POST only" })
      const b64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64"
      let b
      try {
        b = JSON.parse(await body(req))
      } catch {
        return reply(res, 400, { error: "ERR bad JSON" })
      }
      const path = new URL(req.url, "http://x").pathname.replace(/\/+$/, "")
      if (path === "") {
        if (!isCmd(b)) return reply(res, 400, { error: "ERR command must be a non-empty array" })
        const v = await send([b.map(toArg)])[0]
        if (v instanceof Unavailable) return reply(res, 503, { error: v.message })
        const r = wrap(v, b64)
        return reply(res, r.error ? 400 : 200, r)
      }
      if (path === "/pipeline" || path === "/multi-exec") {
        if (!Array.isArray(b) || !b.every(isCmd))
          return reply(res, 400, { error: "ERR body must be an array of commands" })
        const cmds = b.map((c) => c.map(toArg))
        if (path === "/pipeline") {
          const vs = await Promise.all(send(cmds))
          const lost = lostIn(vs)
          if (lost) return reply(res, 503, { error: lost.message })
          return reply(
            res,
            200,
            vs.map((v) => wrap(v, b64)),
          )
        }
        const all = await Promise.all(send([["MULTI"], ...cmds, ["EXEC"]]))
        const lost = lostIn(all)
        if (lost) return reply(res, 503, { error: lost.message })
        const queued = all.slice(1, -1).find((v) => v instanceof RespError),
          exec = all.at(-1)
        if (exec instanceof RespError)
          return reply(res, 400, { error: queued ? `${exec.message}: ${queued.message}` : exec.message })
        if (exec === null) return reply(res, 400, { error: "EXECABORT transaction aborted" })
        return reply(
          res,
          200,
          exec.map((v) => wrap(v, b64)),
        )
      }
      return reply(res, 404, { error: `unknown path ${path}` })
    } catch (e) {
      return reply(res, 500, { error: String(e?.message ?? e) })
    }
  })
  .listen(PORT, "127.0.0.1", () => console.log(`upstash-rest shim on http://127.0.0.1:${PORT}`))
