// An HTTP proxy in front of an Upstash REST server that a test scripts per request: forward the request and then
// drop the connection before the answer (the request reached Redis, its response was lost, so the client resends
// it), or answer a body of the test's choosing. Everything else is relayed as it came.
import http from "node:http"
import type { AddressInfo } from "node:net"

/** What to do with one request: relay it, cut it after Redis ran it, or answer `reply` (a JSON body) instead. */
export type FaultAction = "relay" | "cut" | { readonly reply: unknown }

export interface RestFaultProxy {
  readonly url: string
  /** Decides per request; `commands` is the request's command list (one for `/`, several for `/pipeline`). */
  onRequest: (commands: string[][], path: string) => FaultAction
  /** Requests forwarded to the server, cut ones included. */
  readonly forwarded: number
  readonly cuts: number
  /** The answers the cut requests would have had: a test checks Redis ran each (no NOSCRIPT, no error). */
  readonly cutReplies: string[]
  close(): Promise<void>
}

export async function startRestFaultProxy(target: string): Promise<RestFaultProxy> {
  let forwarded = 0
  let cuts = 0
  const sockets = new Set<import("node:net").Socket>()
  const cutReplies: string[] = []
  const proxy: RestFaultProxy = {
    url: "",
    cutReplies,
    onRequest: () => "relay",
    get forwarded() {
      return forwarded
    },
    get cuts() {
      return cuts
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString("utf8")
    const path = new URL(req.url ?? "/", "http://x").pathname
    let commands: string[][] = []
    try {
      const parsed: unknown = JSON.parse(body)
      commands = path.startsWith("/pipeline") ? (parsed as string[][]) : [parsed as string[]]
    } catch {
      // Relayed as is: the server answers a malformed request itself.
    }
    const action = proxy.onRequest(commands, path)
    if (typeof action === "object") {
      const text = JSON.stringify(action.reply)
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      res.end(text)
      return
    }
    const headers: Record<string, string> = {}
    for (const h of ["authorization", "content-type", "upstash-encoding", "upstash-sync-token"]) {
      const v = req.headers[h]
      if (typeof v === "string") headers[h] = v
    }
    forwarded++
    const up = await fetch(`${target}${req.url ?? "/"}`, { method: req.method ?? "POST", headers, body })
    const text = await up.text()
    if (action === "cut") {
      cuts++
      cutReplies.push(text)
      // Redis has run the request; the client sees its connection reset before any byte of the answer.
      req.socket.resetAndDestroy()
      return
    }
    res.writeHead(up.status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    })
    res.end(text)
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  Object.assign(proxy, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
  return proxy
}
