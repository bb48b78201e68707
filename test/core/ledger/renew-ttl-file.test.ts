// renewLease(Infinity) on the JSON-file store: JSON has no Infinity, so an accepted renewal read back as
// lease_until null, a lease that never lapses. It is refused, as a claim's leaseTtl is.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { ActionLedger, LedgerConfigError } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-renew-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

it("renewLease({ leaseTtl: Infinity }) on the file store is refused and the stored lease stays bounded", async () => {
  const storage = new FileLedgerStorage(join(root, "ledger.json"))
  const ledger = new ActionLedger({
    storage,
    clock: new ManualClock(1000),
    leaseTtl: 60,
    onWarning: () => {},
  })
  const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
  const { entry } = await ledger.claim({ tool: "t", binding, args: {}, requestId: "r1" })
  const guard = { fence: entry.fence, owner: entry.owner, leaseTtl: Number.POSITIVE_INFINITY }
  await expect(ledger.renewLease("r1", guard)).rejects.toThrow(LedgerConfigError)
  expect((await new FileLedgerStorage(join(root, "ledger.json")).get("r1"))?.leaseUntil).toBe(1060)
})
