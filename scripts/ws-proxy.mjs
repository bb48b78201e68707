// The WebSocket-to-TCP proxy the Neon driver talks to Postgres through (scripts/services.sh starts it on :6543).
// It replaced Debian's websockify for the shared service: with password auth, a Neon connection through websockify
// took about 65 ms to open and through this 35-45 ms (measured on the 2-core CI machine); the suite opens thousands.
// Every connection goes to one Postgres, whatever `?address=` asks for: nothing else on the machine is reachable.
// usage: node scripts/ws-proxy.mjs <listen port> <postgres port>
import { connect } from "node:net"
import { WebSocketServer } from "ws"

const [listen, target] = process.argv.slice(2).map(Number)
const server = new WebSocketServer({ host: "127.0.0.1", port: listen })
server.on("connection", (ws) => {
  const pg = connect({ host: "127.0.0.1", port: target, noDelay: true })
  ws.binaryType = "nodebuffer"
  ws.on("message", (data) => pg.write(data))
  pg.on("data", (data) => ws.send(data))
  // Either side gone: the other goes too, as a dropped TCP connection would.
  ws.on("close", () => pg.destroy())
  ws.on("error", () => pg.destroy())
  pg.on("close", () => ws.terminate())
  pg.on("error", () => ws.terminate())
})
server.on("listening", () => console.log(`ws-proxy :${listen} -> postgres :${target}`))
