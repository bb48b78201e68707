// A loopback TCP forwarder a test can cut and restore: an outage of one client's path to a shared service,
// without stopping the service other test files are using.
import net from "node:net"

export interface TcpProxy {
  readonly port: number
  /** Refuse new connections and reset the open ones, as a crashed server or a cut network would. */
  stop(): Promise<void>
  /** Listen again on the same port. */
  start(): Promise<void>
}

export async function startTcpProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>()
  let server: net.Server | null = null
  let port = 0
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost)
        for (const sock of [client, upstream]) {
          sockets.add(sock)
          sock.on("close", () => sockets.delete(sock))
          sock.on("error", () => {
            client.destroy()
            upstream.destroy()
          })
        }
        client.pipe(upstream)
        upstream.pipe(client)
      })
      s.once("error", reject)
      s.listen(port, "127.0.0.1", () => {
        port = (s.address() as net.AddressInfo).port
        server = s
        resolve()
      })
    })
  await listen()
  return {
    get port() {
      return port
    },
    async stop() {
      const s = server
      server = null
      for (const sock of sockets) sock.resetAndDestroy()
      sockets.clear()
      if (s) await new Promise<void>((r) => s.close(() => r()))
    },
    start: listen,
  }
}
