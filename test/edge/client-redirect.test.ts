// RemoteLedger follows no redirect: followed, a 303 turns the claim (POST) into a GET and a 307 sends the call's
// arguments to another origin. The call fails closed as an outage and its body does not run.
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const servers: Server[] = []
afterAll(() => {
  for (const s of servers) s.close()
})

function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  return new Promise((ready) =>
    server.listen(0, "127.0.0.1", () => ready(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  )
}

describe("RemoteLedger and redirects", () => {
  it.each([303, 307, 308])(
    "a %i is refused as an outage: nothing is sent on, the body does not run",
    async (status) => {
      const elsewhere: string[] = []
      const other = await listen((req, res) => {
        elsewhere.push(`${req.method} ${req.url}`)
        res.writeHead(200, { "content-type": "application/json" }).end('{"action":"run"}')
      })
      const base = await listen((req, res) => {
        res
          .writeHead(status, { location: `${other}${req.url}`, "content-type": "application/json" })
          .end("{}")
      })
      const remote = new RemoteLedger({ baseUrl: base, onWarning: () => {} })
      let runs = 0
      const pay = remote.tool(
        { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
        async (a: { amount: number }) => {
          runs++
          return a.amount
        },
      )
      await expect(pay({ amount: 5 }, { toolCallId: "c1" })).rejects.toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
      expect(elsewhere).toEqual([])
      expect(runs).toBe(0)
    },
  )
})
