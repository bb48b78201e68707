// The ledger API process of the edge chaos test on the Cloudflare worker: the production bundle of
// src/edge/worker.ts (Hono over the MyceliumLedgerObject SQLite Durable Object) run by workerd through Miniflare,
// its Durable Object state persisted in a directory. Requests reach workerd through the logging bridge
// (edge-request-log.ts) in this process. workerd is this process's child in its process group: the parent
// SIGKILLs the group and starts it again on the same directory and port.
// argv: port secret tenant requestsLog stateDir workerScript compatibilityDate
import { dirname, join } from "node:path"
import { Miniflare } from "miniflare"
import { serveLogged } from "./edge-request-log.ts"

const [port, secret, , requestsLog, stateDir, workerScript, compatibilityDate] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
]
// What wrangler.toml declares, with the secret the worker needs; the worker serves any tenant its tokens name.
const mf = new Miniflare({
  modules: true,
  modulesRoot: dirname(workerScript),
  scriptPath: workerScript,
  compatibilityDate,
  durableObjects: { LEDGER: { className: "MyceliumLedgerObject", useSQLite: true } },
  durableObjectsPersist: join(stateDir, "durable-objects"),
  bindings: { LEDGER_JWT_SECRET: secret },
  host: "127.0.0.1",
  port: 0,
})
const workerd = await mf.ready
await serveLogged(
  async (request) => {
    const url = new URL(request.url)
    const body =
      request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer()
    const answer = await fetch(new URL(url.pathname + url.search, workerd), {
      method: request.method,
      headers: request.headers,
      ...(body ? { body } : {}),
    })
    // fetch() asks workerd for gzip and decodes it: the decoded body must not go out under the encoding's headers.
    const headers = new Headers(answer.headers)
    headers.delete("content-encoding")
    headers.delete("content-length")
    return new Response(answer.body, { status: answer.status, headers })
  },
  Number(port),
  requestsLog,
)
process.stdout.write("READY\n")
