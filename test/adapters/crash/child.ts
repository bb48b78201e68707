// A worker that claims one transition and then hangs, to be killed with SIGKILL by the parent test.
// argv: backend where sideEffectClass phase(before|inside) effectsFile
import { appendFileSync } from "node:fs"
import { ActionLedger, type SideEffectClass } from "../../../src/core/index.ts"
import { hang } from "../../hang.ts"
import { type Backend, openStorage } from "./storage.ts"

const [backend, where, cls, phase, effects] = process.argv.slice(2) as [
  Backend,
  string,
  SideEffectClass,
  string,
  string,
]
const { storage } = await openStorage(backend, where)
const ledger = new ActionLedger({ storage, leaseTtl: 1, owner: `child-${process.pid}`, onWarning: () => {} })
const binding = { agentId: "crash", policyVersion: "1", sideEffectClass: cls }
const tool = ledger.tool({ name: "transfer", binding }, async (_a, tx) => {
  if (phase === "inside") {
    await tx.sideEffect(async () => {
      appendFileSync(effects, `child ${process.pid}\n`)
      console.log("READY")
      await hang()
    })
  }
  console.log("READY")
  await hang()
})
await tool({ amount: 5 }, { requestId: "transfer:1" })
