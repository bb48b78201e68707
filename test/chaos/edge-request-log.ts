// The request log of an edge chaos API server: `s <n> <method> <path>` when a request arrives, `e <n>` once it is
// answered, written synchronously so a SIGKILL keeps every line before it. The parent reads it after a kill to count
// the requests the kill cut off.
import { appendFileSync } from "node:fs"
import { type FetchHandler, serve } from "../../src/cli/http-bridge.ts"
import { lines } from "./chaos-kit.ts"

/** Serves `handler` on loopback `port` through the bridge `mycelium serve` uses, logging every request. */
export async function serveLogged(handler: FetchHandler, port: number, requestsLog: string): Promise<void> {
  let n = 0
  await serve(async (request) => {
    const id = ++n
    appendFileSync(requestsLog, `s ${id} ${request.method} ${new URL(request.url).pathname}\n`)
    try {
      return await handler(request)
    } finally {
      appendFileSync(requestsLog, `e ${id}\n`)
    }
  }, port)
}

/** Requests a killed server had begun and not answered, as `<method> <route>`. */
export function cutRequests(log: string): string[] {
  const open = new Map<string, string>()
  for (const l of lines(log)) {
    const [kind, n, method, path] = l.split(" ")
    if (kind === "s" && n && method && path)
      open.set(n, `${method} ${path.replace(/\/(calls|transitions)\/[^/]+/, "/$1/:id")}`)
    else if (kind === "e" && n) open.delete(n)
  }
  return [...open.values()]
}
