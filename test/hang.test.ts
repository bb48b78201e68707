// The child scripts the crash tests SIGKILL wait in hang(): the wait must hold the process until the kill lands.
import { spawn } from "node:child_process"
import { once } from "node:events"
import { writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { childBundles } from "./child-bundle.ts"
import { tempDirs } from "./temp-dirs.ts"

const bundled = childBundles()
const tempDir = tempDirs("mycelium-hang-")

function start(body: string) {
  const file = join(tempDir(), "child.ts")
  writeFileSync(file, `import { hang } from ${JSON.stringify(resolve("test/hang.ts"))}\n${body}\n`)
  const child = spawn(process.execPath, [bundled(file)])
  const ready = new Promise<void>((r) => child.stdout.on("data", (d) => String(d).includes("READY") && r()))
  return { child, ready, closed: once(child, "close") as Promise<[number | null, string | null]> }
}

describe("hang()", () => {
  it("a bare pending promise lets Node exit 13 by itself, before any kill", async () => {
    // hang stays imported but unused, so the two children differ only in how they wait.
    const { closed } = start('console.log("READY")\nawait new Promise(() => {})')
    expect(await closed).toEqual([13, null])
  })

  it("holds the process open until SIGKILL", async () => {
    const { child, ready, closed } = start('console.log("READY")\nawait hang()')
    await ready
    await new Promise((r) => setTimeout(r, 500))
    expect(child.exitCode).toBeNull()
    child.kill("SIGKILL")
    expect(await closed).toEqual([null, "SIGKILL"])
  })
})
