// Temp folders a test file makes, removed after its last test (npm test left dozens in /tmp on every run).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"

/** Call at a file's top level: a maker of fresh folders named `prefix…`, all removed after the file's tests. */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = []
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix))
    dirs.push(dir)
    return dir
  }
}
