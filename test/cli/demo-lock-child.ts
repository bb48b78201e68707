// One of several processes that try the demo lock of one folder at the same moment (argv: dir). It says READY, then
// reads the start time in ms on stdin (sent once every process is ready, so a slow start is never a late try), tries
// the lock, says LOCKED or BUSY, and holds what it took until stdin closes (after every process has answered).
import { lockDemoDir } from "../../src/cli/demo-lock.ts"

const [dir] = process.argv.slice(2)
let input = ""
process.stdin.on("data", (d) => {
  const first = !input.includes("\n")
  input += String(d)
  if (!first || !input.includes("\n")) return
  const go = Number(input.split("\n")[0])
  while (Date.now() < go) {}
  try {
    lockDemoDir(dir as string)
    console.log("LOCKED")
  } catch {
    console.log("BUSY")
  }
})
process.stdin.on("end", () => process.exit(0))
console.log("READY")
