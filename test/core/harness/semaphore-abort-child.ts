// Child of semaphore-abort.test.ts, run with --expose-gc: a permit held for the whole run while 20,000 waiters time
// out one after another (as requests queued behind a hung one do), then reports how many of the aborted waiters'
// signals the garbage collector could reclaim before any release.
import { Semaphore } from "../../../src/core/harness/semaphore.ts"

const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error("run with node --expose-gc")
const nextTick = () => new Promise((r) => setTimeout(r, 0))

const sem = new Semaphore(1)
const hold = await sem.acquire()
const signals: WeakRef<AbortSignal>[] = []
for (let i = 0; i < 20_000; i++) {
  const c = new AbortController()
  signals.push(new WeakRef(c.signal))
  const wait = sem.acquire(c.signal).catch(() => "aborted")
  c.abort(new Error(`timeout ${i}`))
  await wait
}
await nextTick()
gc()
await nextTick()
const alive = signals.filter((r) => r.deref() !== undefined).length
hold()
// The permit is still the only one, and it comes back.
const again = await sem.acquire()
again()
process.stdout.write(JSON.stringify({ aborted: signals.length, alive, inUse: sem.inUse }))
