// The scenarios of vanish.ts over every real store (vanish-lanes.ts). Fails, never skips, when a service is down;
// a case a store cannot have (the memory store's rows cannot be deleted; only Redis and Upstash have a tombstone to
// outlive their row key) is listed as skipped with the reason.
import { afterAll, beforeAll, describe, it } from "vitest"
import { dropKeys, runTag } from "./env.ts"
import { storeServices } from "./services.ts"
import { SCENARIOS, World } from "./vanish.ts"
import { vanishLanes } from "./vanish-lanes.ts"

const TAG = runTag("vanish").replace(/-/g, "_")
const services = storeServices("vanish")
services.closers.push(() => dropKeys(`mycelium-test:${TAG}:*`))
const lanes = vanishLanes(services, TAG)
let ids = 0

beforeAll(async () => {
  for (const lane of lanes) await lane.ready?.()
})
afterAll(async () => {
  for (const lane of lanes) await lane.close()
})

for (const lane of lanes) {
  describe(`${lane.name}: the world changes a row under the ledger`, () => {
    for (const s of SCENARIOS) {
      const lacks =
        s.needs === "outside" && lane.drop === null
          ? "its rows cannot be deleted or put back from outside the process"
          : s.needs === "tombstone" && !lane.evict
            ? "no tombstone outlives the row"
            : null
      if (lacks) {
        it.skip(`${s.name} (not applicable: ${lacks})`, () => {})
        continue
      }
      it(s.name, async () => {
        const world = new World(lane)
        try {
          await s.run(world, `vanish-${++ids}`)
        } finally {
          await world.close()
        }
      })
    }
  })
}
