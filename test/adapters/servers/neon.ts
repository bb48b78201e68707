// The Neon serverless driver pointed at the local Postgres through the WebSocket proxy (toolchain §3.3).
import { Client, type ClientConfig, neonConfig, Pool } from "@neondatabase/serverless"
import ws from "ws"
import { DATABASE_URL, NEON_WS_PROXY, SERVICES_HINT } from "./env.ts"

neonConfig.webSocketConstructor = ws
neonConfig.useSecureWebSocket = false
neonConfig.pipelineTLS = false
// Required with SCRAM auth: the pipelined startup assumes cleartext password auth.
neonConfig.pipelineConnect = false
neonConfig.wsProxy = (host, port) => `${NEON_WS_PROXY}/v1?address=${host}:${port}`

/** A pool whose WebSockets go to `proxy` (host:port), the shared one (scripts/ws-proxy.mjs) by default. */
export function neonPool(proxy = NEON_WS_PROXY, max = 10): Pool {
  // A client class per pool, so an outage test can point one pool at a proxy it kills without touching others.
  class ProxiedClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config)
      this.neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`
    }
  }
  const pool = new Pool({ connectionString: DATABASE_URL, max })
  pool.Client = ProxiedClient
  // An idle client whose socket dies must not crash the test process; the next query reports it.
  pool.on("error", () => {})
  return pool
}

export async function requirePostgres(pool: Pool): Promise<void> {
  try {
    await pool.query("SELECT 1")
  } catch (e) {
    throw new Error(
      `Postgres via the WebSocket proxy ${NEON_WS_PROXY} is not answering (${String(e)}); ${SERVICES_HINT}`,
    )
  }
}
