// Runs a child script (bundled, see child-bundle.ts), waits until it prints READY (it is then inside the window under test), and
// SIGKILLs it there: the crash the crash tests are about, with no chance for the child to clean up.
import { spawn } from "node:child_process"
import { childBundles } from "../../child-bundle.ts"

// Imported at a test file's top level, so the bundles go after that file's tests.
const bundled = childBundles()

export async function killWhenReady(script: string, args: readonly string[]): Promise<void> {
  const child = spawn(process.execPath, [bundled(script), ...args])
  let out = ""
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child never got ready: ${out}`)), 30_000)
    child.stdout.on("data", (d) => {
      out += String(d)
      if (out.includes("READY")) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.stderr.on("data", (d) => {
      out += String(d)
    })
    child.once("exit", (code) => reject(new Error(`child exited ${code} before READY: ${out}`)))
  })
  const exited = new Promise((r) => child.once("exit", r))
  child.kill("SIGKILL")
  await exited
}
