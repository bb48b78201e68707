// A minimal node:http → fetch bridge for the local ledger API, hardened for a machine with a browser on it:
// only loopback Host values (no DNS rebinding), no cross-origin writes, JSON bodies only, a body limit.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { MyceliumError } from "../core/errors.ts"
import { LOOPBACK_HOSTS } from "./options.ts"

export type FetchHandler = (request: Request) => Response | Promise<Response>

export interface LocalServeOptions {
  /** Interface to bind. Default 127.0.0.1. */
  readonly host?: string
  /** Largest request body in bytes. Default 1 MiB. */
  readonly maxBodyBytes?: number
  /**
   * Seconds a client has to send a whole request (headers within the same time, at most 10). Default 30: Node's
   * own 300 let a local process hold connections open with a trickled body.
   */
  readonly requestTimeout?: number
}

/** A request the bridge refuses before the app sees it (foreign Host or Origin, not JSON, too large). */
class Refusal extends MyceliumError {
  override readonly name = "Refusal"
  override readonly code: string
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(message)
    this.code = code
  }
}

/** `host[:port]` → host, lowercased; IPv6 keeps its brackets. */
function hostName(hostHeader: string): string {
  const h = hostHeader.toLowerCase()
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1)
  return h.split(":")[0] ?? ""
}

// The methods the API has routes for, and the two every HTTP server answers. `new Request()` throws on TRACE, TRACK
// and CONNECT, which Node's parser accepts: that was a 500.
const METHODS = /^(GET|HEAD|OPTIONS|POST|PUT)$/

function check(req: IncomingMessage, port: number): void {
  // First: TRACE without a body would otherwise be told to send JSON (415) instead of 405.
  if (!METHODS.test(req.method ?? "GET"))
    throw new Refusal(405, "method_not_allowed", "the ledger API takes GET, POST and PUT")
  const host = req.headers.host?.trim() ?? ""
  const name = hostName(host)
  const portPart = host.slice(name.length)
  if (!LOOPBACK_HOSTS.has(name) || (portPart !== "" && portPart !== `:${port}`))
    throw new Refusal(
      403,
      "forbidden_host",
      "this local API answers only to Host 127.0.0.1, localhost or [::1]",
    )
  // OPTIONS carries no body to type (a preflight never does): it is answered by the app, not told to send JSON.
  const method = req.method ?? "GET"
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") return
  const origin = req.headers.origin
  if (origin !== undefined) {
    let ok = false
    try {
      const u = new URL(origin)
      ok = u.protocol === "http:" && LOOPBACK_HOSTS.has(u.hostname) && u.port === String(port)
    } catch {
      ok = false
    }
    if (!ok)
      throw new Refusal(403, "forbidden_origin", "cross-origin writes to the local ledger API are refused")
  }
  if (!/^application\/json\s*(;|$)/i.test(req.headers["content-type"] ?? ""))
    throw new Refusal(415, "unsupported_media_type", "send the body as 'Content-Type: application/json'")
}

// Read with listeners, not `for await`: leaving a for-await loop destroys the socket, and a client still sending
// then loses the 413 it was answered with.
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const declared = req.headers["content-length"]
  if (declared !== undefined && Number(declared) > max)
    return Promise.reject(new Refusal(413, "payload_too_large", `request body over ${max} bytes`))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    let over = false
    req.on("data", (c: Buffer) => {
      if (over) return
      total += c.length
      if (total > max) {
        over = true
        chunks.length = 0
        reject(new Refusal(413, "payload_too_large", `request body over ${max} bytes`))
      } else chunks.push(c)
    })
    req.once("end", () => resolve(Buffer.concat(chunks)))
    req.once("error", reject)
  })
}

async function toRequest(req: IncomingMessage, origin: string, max: number): Promise<Request> {
  const method = req.method ?? "GET"
  const body = method === "GET" || method === "HEAD" ? undefined : await readBody(req, max)
  const headers = new Headers()
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) for (const x of v) headers.append(k, x)
    else if (v !== undefined) headers.set(k, v)
  }
  // Origin-form only, appended to our origin: an absolute-form target (`http://[/v1/...`) made URL() throw (a 500),
  // and a relative `//host/path` would have resolved to another host's path.
  const target = req.url ?? "/"
  if (!target.startsWith("/") || !URL.canParse(origin + target))
    throw new Refusal(400, "invalid_path", "the request target must be a path, e.g. /v1/transitions")
  return new Request(new URL(origin + target), {
    method,
    headers,
    ...(body?.length ? { body: new Uint8Array(body) } : {}),
  })
}

/** How long a refused client may go on sending before its connection is cut. */
const LINGER_MS = 1000

function refuse(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
): void {
  // A client still sending its body must be able to read this answer. Closing the socket with unread data resets
  // it, and the client can lose the answer before reading it (why nginx lingers on close); so the connection stays
  // up while Node reads and drops the rest of the body, for a second at most, then it is cut.
  const sending = !req.complete
  res.writeHead(status, { "content-type": "application/json", ...(sending ? {} : { connection: "close" }) })
  res.end(JSON.stringify({ error: { code, message } }))
  if (!sending) return
  req.resume()
  const cut = setTimeout(() => req.socket.destroy(), LINGER_MS)
  cut.unref()
  req.socket.once("close", () => clearTimeout(cut))
}

/** Serves `handler` on host:port; resolves with the server once it listens. */
export function serve(handler: FetchHandler, port: number, options: LocalServeOptions = {}): Promise<Server> {
  const host = options.host ?? "127.0.0.1"
  const max = options.maxBodyBytes ?? 1024 * 1024
  const timeout = (options.requestTimeout ?? 30) * 1000
  const limits = {
    requestTimeout: timeout,
    headersTimeout: Math.min(timeout, 10_000),
    // Node checks the timeouts on this interval (30 s by default, which would double the default timeout).
    connectionsCheckingInterval: Math.min(timeout / 2, 1000),
  }
  const server = createServer(limits, async (req, res) => {
    try {
      const address = server.address()
      const actualPort = typeof address === "object" && address ? address.port : port
      check(req, actualPort)
      const response = await handler(await toRequest(req, `http://${host}:${actualPort}`, max))
      res.writeHead(response.status, Object.fromEntries(response.headers))
      res.end(Buffer.from(await response.arrayBuffer()))
    } catch (e) {
      if (e instanceof Refusal) refuse(req, res, e.status, e.code, e.message)
      else refuse(req, res, 500, "internal_error", "internal error")
    }
  })
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => resolve(server))
  })
}
