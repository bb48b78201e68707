// The ledger API process of the edge chaos test on a file: createLedgerApp over one FileLedgerStorage file, JWT
// (HS256) auth, served by the bridge `mycelium serve` uses. It is SIGKILLed at random and started again on the same
// file and port, logging each request (edge-request-log.ts).
// argv: port secret tenant requestsLog stateDir
import { join } from "node:path"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import { serveLogged } from "./edge-request-log.ts"

const [port, secret, tenant, requestsLog, stateDir] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
]
const storage = new FileLedgerStorage(join(stateDir, "ledger.json"))
const app = createLedgerApp({
  storage: (t) => {
    if (t !== tenant) throw new Error(`no ledger for tenant ${t}`)
    return storage
  },
  authenticate: jwtAuth({ secret }),
  // Silence is never death here: only the operator, who knows which agents were killed, says so.
  presumedDeadAfter: 3600,
  pollInterval: 0.02,
})
await serveLogged((request) => app.fetch(request), Number(port), requestsLog)
process.stdout.write("READY\n")
