// A minimal node:http → fetch bridge, enough to serve a Hono app locally without another dependency.
import { createServer, type IncomingMessage, type Server } from "node:http"

export type FetchHandler = (request: Request) => Response | Promise<Response>

async function toRequest(req: IncomingMessage, origin: string): Promise<Request> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  const body = chunks.length ? Buffer.concat(chunks) : undefined
  const headers = new Headers()
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) for (const x of v) headers.append(k, x)
    else if (v !== undefined) headers.set(k, v)
  }
  const method = req.method ?? "GET"
  return new Request(new URL(req.url ?? "/", origin), {
    method,
    headers,
    ...(body && method !== "GET" && method !== "HEAD" ? { body } : {}),
  })
}

/** Serves `handler` on host:port; resolves with the server once it listens. */
export function serve(handler: FetchHandler, port: number, host = "127.0.0.1"): Promise<Server> {
  const origin = `http://${host}:${port}`
  const server = createServer(async (req, res) => {
    try {
      const response = await handler(await toRequest(req, origin))
      res.writeHead(response.status, Object.fromEntries(response.headers))
      res.end(Buffer.from(await response.arrayBuffer()))
    } catch (e) {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { code: "internal_error", message: String(e) } }))
    }
  })
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => resolve(server))
  })
}
