// Run by Deno and Bun (test/runtimes/deno-bun.test.ts): two concurrent sessions, each with its own cache, found
// implicitly across awaits through the runtime's node:async_hooks, registered by the async-context entry.
import "../../src/async-context.ts"
import { hasAsyncContext, protect, Session } from "../../src/core/context/index.ts"

let calls = 0
const lookup = protect(
  async ({ id }: { id: string }) => {
    calls++
    await new Promise((r) => setTimeout(r, 2))
    return `${id}@${calls}`
  },
  { entityParam: "id", name: "als_lookup" },
)

const seen: boolean[] = []
const run = (s: Session) =>
  s.run(async () => {
    await new Promise((r) => setTimeout(r, 1))
    const first = await lookup({ id: "a" })
    await Promise.resolve()
    const again = await lookup({ id: "a" }) // served from this session's cache
    seen.push(Session.current() === s && first === again)
  })
const s1 = new Session()
const s2 = new Session()
await Promise.all([run(s1), run(s2)])
const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node"
console.log(
  JSON.stringify({
    runtime,
    hasAsyncContext: hasAsyncContext(),
    calls,
    sameSessionEverywhere: seen,
    outside: Session.current() === undefined,
  }),
)
