// A StateFlush writer for the kill tests: checkpoints a large state over and over until it is SIGKILLed.
// argv: path runId. Prints "WROTE <n>" to stderr after each completed checkpoint.
import { FileStateFlushStore } from "../../../src/adapters/file-state.ts"
import { StateFlush } from "../../../src/state.ts"
import "../../adapters/file-lock-park.ts"

const [path, runId] = process.argv.slice(2) as [string, string]
const flush = new StateFlush({ storage: new FileStateFlushStore(path, { lockTimeout: 60 }) })
await flush.run(runId, async (run) => {
  for (let n = 1; ; n++) {
    // Every write carries n in two places and a blob whose length encodes n: a torn write cannot agree with itself.
    run.record({ n, blob: "y".repeat(500_000 + n), tail: n })
    await run.checkpoint()
    process.stderr.write(`WROTE ${n}\n`)
  }
})
