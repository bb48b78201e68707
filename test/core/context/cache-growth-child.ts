// Child of adversarial-cache-growth.test.ts, run with --expose-gc: fills a ToolCache with entries that expire,
// keeps using the cache with as many new keys (as a model cycling through entity ids would), and reports how
// many of the expired values the garbage collector could reclaim. The cache sweeps when it has doubled since its
// last sweep, so 20,000 new keys after 20,000 expired ones must have triggered one.
import { ToolCache } from "../../../src/core/context/index.ts"

const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error("run with node --expose-gc")
const nextTick = () => new Promise((r) => setTimeout(r, 0))

let now = 0
const cache = new ToolCache({ clock: () => now })
const expired: WeakRef<object>[] = []
for (let i = 0; i < 20_000; i++) {
  const value = { id: `old-${i}`, payload: "x".repeat(64) }
  expired.push(new WeakRef(value))
  await cache.getOrLoad(`old-${i}`, 60, () => value)
}
now += 61 // every old entry is past its TTL; none of their keys is ever asked for again
for (let i = 0; i < 20_000; i++) await cache.getOrLoad(`new-${i}`, 60, () => ({ id: `new-${i}` }))
await nextTick()
gc()
await nextTick()
const alive = expired.filter((r) => r.deref() !== undefined).length
process.stdout.write(JSON.stringify({ expired: expired.length, alive, live: cache.size }))
