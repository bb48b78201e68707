// One of several processes that try the demo lock of one folder at the same moment (argv: dir, start time in ms).
import { lockDemoDir } from "../../src/cli/demo-lock.ts"

const [dir, go] = process.argv.slice(2)
while (Date.now() < Number(go)) {}
try {
  lockDemoDir(dir as string)
  console.log("LOCKED")
  setTimeout(() => {}, 1500)
} catch {
  console.log("BUSY")
}
