// A hostile agent against the workspace's file tools: special files that would block an open() forever.
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FileReadAction, FileWriteAction } from "../../src/harness/workspace/index.ts"
import { startedWorkspace, within } from "./started-workspace.ts"

describe("a FIFO in the workspace", () => {
  // open() of a FIFO without O_NONBLOCK waits for the other end forever, holding one of libuv's four threadpool
  // threads: four such reads stall every file operation of the process.
  it("file_read of a FIFO is refused at once instead of blocking forever", async () => {
    const w = await startedWorkspace()
    execFileSync("mkfifo", [join(w.root, "pipe")])
    const obs = await within(w.act(FileReadAction({ path: "pipe" })), 3_000)
    expect(obs.kind).toBe("error")
  })

  it("file_write to a FIFO is refused at once instead of blocking", async () => {
    const w = await startedWorkspace()
    execFileSync("mkfifo", [join(w.root, "pipe")])
    const obs = await within(w.act(FileWriteAction({ path: "pipe", content: "x" })), 3_000)
    expect(obs.kind).toBe("error")
  })
})
