// One chaos worker process: calls a ledgered, non-idempotent "charge" tool on random request ids until it is
// SIGKILLed. The "provider" is an append-only file outside the ledger: every real execution appends
// `<id> <ref>`, so the parent counts effects independently of the code under test.
// argv: backend (a name in backends.ts) where providerLog resultsLog ids concurrency startedAtMs owner
import { appendFileSync } from "node:fs"
import { ActionLedger } from "../../src/core/index.ts"
import { backends, type ChaosBackendName } from "./backends.ts"
import { exitWithParent } from "./exit-with-parent.ts"
import { chargeWindow, pickIn } from "./id-window.ts"

const [backend, where, providerLog, resultsLog, idCount, concurrency, startedAt, owner] = process.argv.slice(
  2,
) as [ChaosBackendName, string, string, string, string, string, string, string]
const { storage } = await backends[backend].open(where, false)
const ledger = new ActionLedger({
  storage,
  owner,
  leaseTtl: 1,
  leaseRenewInterval: 0.2,
  pollInterval: 0.02,
  pollTimeout: 2,
  // Heartbeat silence never counts as death here: only the supervisor (the parent, which did the killing) says so.
  presumedDeadAfter: 3600,
  onWarning: () => {},
})

const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 15))
let seq = 0
const charge = ledger.tool(
  {
    name: "charge",
    binding: { agentId: "chaos", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
  },
  async (args: { id: string }, tx) => {
    await jitter()
    return tx.sideEffect(async () => {
      // The provider's latency: the widest window, where a stalled owner is past its boundary but not charged yet.
      await new Promise((r) => setTimeout(r, 60 + Math.random() * 120))
      const ref = `ch-${owner}-${++seq}`
      appendFileSync(providerLog, `${args.id} ${ref}\n`)
      await jitter()
      return ref
    })
  },
)

const ids = Number(idCount)
const pickId = () => `chaos:${pickIn(chargeWindow, Date.now() - Number(startedAt), ids)}`
async function loop(): Promise<never> {
  for (;;) {
    const id = pickId()
    try {
      const ref = await charge({ id }, { requestId: id })
      appendFileSync(resultsLog, `ok ${id} ${ref} ${owner}\n`)
    } catch (e) {
      appendFileSync(resultsLog, `err ${id} ${(e as Error).name ?? "Error"} ${owner}\n`)
      await jitter()
    }
  }
}
exitWithParent()
process.stdout.write("READY\n")
await Promise.all(Array.from({ length: Number(concurrency) }, loop))
