// Servers that stop answering, for the stores' timeouts: a hung server is an outage, and an outage must fail the
// call closed instead of holding it. Each registers its own shutdown in the caller's list of closers.
import { createServer as createHttpServer } from "node:http"
import net from "node:net"

export type Closers = (() => Promise<unknown> | unknown)[]

/** A TCP server that accepts every connection and never sends a byte. */
export async function silentTcp(closers: Closers): Promise<number> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((s) => {
    sockets.add(s)
    s.on("error", () => {})
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  closers.push(() => {
    for (const s of sockets) s.destroy()
    return new Promise((r) => server.close(r))
  })
  return (server.address() as net.AddressInfo).port
}

/** An HTTP server that reads every request and never answers it. */
export async function silentHttp(closers: Closers): Promise<{ port: number; requests: () => number }> {
  let requests = 0
  const server = createHttpServer(() => {
    requests++
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  closers.push(() => {
    server.closeAllConnections()
    return new Promise((r) => server.close(r))
  })
  return { port: (server.address() as net.AddressInfo).port, requests: () => requests }
}

/** A TCP proxy to `target` that, once `stall()` is called, keeps reading both sides and passes nothing on. */
export async function stallingProxy(closers: Closers, target: { host: string; port: number }) {
  let stalled = false
  const sockets = new Set<net.Socket>()
  const clients = new Set<net.Socket>()
  const server = net.createServer((client) => {
    clients.add(client)
    client.on("close", () => clients.delete(client))
    const upstream = net.connect(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on("error", () => {})
      s.on("close", () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.on("data", (b) => stalled || upstream.write(b))
    upstream.on("data", (b) => stalled || client.write(b))
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  closers.push(() => {
    for (const s of sockets) s.destroy()
    return new Promise((r) => server.close(r))
  })
  return {
    port: (server.address() as net.AddressInfo).port,
    stall: () => {
      stalled = true
    },
    /** Connections the proxy's clients still hold open. */
    open: () => clients.size,
  }
}
