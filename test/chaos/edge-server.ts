// The ledger API process of the edge chaos test: createLedgerApp over one FileLedgerStorage file, JWT (HS256) auth,
// served by the bridge `mycelium serve` uses. It is SIGKILLed at random and started again on the same file and
// port. Each request is logged (`s <n> <method> <path>` when it arrives, `e <n>` when the app has answered it), so
// the parent can count the requests a kill cut off.
// argv: port ledgerFile secret tenant requestsLog
import { appendFileSync } from "node:fs"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { serve } from "../../src/cli/http-bridge.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"

const [port, ledgerFile, secret, tenant, requestsLog] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
]
const storage = new FileLedgerStorage(ledgerFile)
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
let n = 0
await serve(async (request) => {
  const id = ++n
  appendFileSync(requestsLog, `s ${id} ${request.method} ${new URL(request.url).pathname}\n`)
  try {
    return await app.fetch(request)
  } finally {
    appendFileSync(requestsLog, `e ${id}\n`)
  }
}, Number(port))
process.stdout.write("READY\n")
