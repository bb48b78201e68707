// One agent process of the edge chaos test: a RemoteLedger with a `ledger:agent` token calling a non-idempotent
// "charge" tool on random request ids through the HTTP API, until it is SIGKILLed. Every real execution appends
// `<id> <ref>` to the provider log, outside the ledger, as in kill-chaos's worker.
// argv: baseUrl token providerLog resultsLog attemptsLog ids concurrency startedAtMs owner
import { appendFileSync } from "node:fs"
import { LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { RemoteLedger, RemoteLedgerError } from "../../src/edge/client.ts"
import { AttemptLog } from "./edge-attempts.ts"
import { exitWithParent } from "./exit-with-parent.ts"

const [baseUrl, token, providerLog, resultsLog, attemptsLog, idCount, concurrency, startedAt, owner] =
  process.argv.slice(2) as [string, string, string, string, string, string, string, string, string]
const ledger = new RemoteLedger({
  baseUrl,
  token,
  leaseTtl: 1,
  leaseRenewInterval: 0.2,
  pollTimeout: 2,
  // The server is never stopped, only killed (its sockets close): a hung request would be a bug, not chaos.
  requestTimeout: 5,
  onWarning: () => {},
})
const attempts = new AttemptLog(attemptsLog, owner)
const binding = { agentId: "chaos", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const jitter = () => sleep(Math.random() * 15)
let seq = 0

/** One call on `id`: a tool per attempt, so its body can log the claim it was given under this attempt. */
const charge = (id: string) =>
  attempts.attempt(id, (claimed) =>
    ledger.tool({ name: "charge", binding }, async (_args: { id: string }, tx) => {
      claimed(tx.fence)
      await jitter()
      return tx.sideEffect(async () => {
        // The provider's latency: the widest window, where a killed or cut-off owner is past its boundary.
        await sleep(40 + Math.random() * 80)
        const ref = `ch-${owner}-${++seq}`
        appendFileSync(providerLog, `${id} ${ref}\n`)
        await jitter()
        return ref
      })
    })({ id }, { requestId: id }),
  )

const ids = Number(idCount)
/** kill-chaos's sliding window: 16 ids moving forward at 8 ids/s, so redispatches collide and fresh ids keep coming. */
function pickId(): string {
  const hi = Math.min(ids, 16 + Math.floor((Date.now() - Number(startedAt)) / 125))
  const lo = Math.max(0, hi - 16)
  return `chaos:${lo + Math.floor(Math.random() * (hi - lo))}`
}

/** `Name` or `Name:code`: the parent tells the API's refusals apart by code. */
const errorName = (e: unknown) =>
  e instanceof RemoteLedgerError ? `${e.name}:${e.code}` : ((e as Error).name ?? "Error")

async function loop(): Promise<never> {
  for (;;) {
    const id = pickId()
    try {
      const ref = await charge(id)
      appendFileSync(resultsLog, `ok ${id} ${ref} ${owner}\n`)
    } catch (e) {
      appendFileSync(resultsLog, `err ${id} ${errorName(e)} ${owner}\n`)
      // The server is down (killed, restarting): no busy loop on refused connections.
      await (e instanceof LedgerStorageUnavailableError ? sleep(50 + Math.random() * 50) : jitter())
    }
  }
}
exitWithParent()
process.stdout.write("READY\n")
await Promise.all(Array.from({ length: Number(concurrency) }, loop))
