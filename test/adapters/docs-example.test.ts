// docs/adapter-kit.md shows a whole LedgerStorage and says it passes the conformance suite: this runs the page's
// own block through it, so the example cannot drift from the contract unnoticed.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { testLedgerStorage } from "../../src/conformance.ts"
import type { LedgerStorage } from "../../src/core/index.ts"

const page = readFileSync("docs/adapter-kit.md", "utf8")
const block = /```ts\n([\s\S]*?export class MapStorage[\s\S]*?)```/.exec(page)?.[1]
if (!block) throw new Error("docs/adapter-kit.md no longer holds the MapStorage example")
const dir = resolve("node_modules/.cache/docs-example")
mkdirSync(dir, { recursive: true })
const file = join(dir, `map-storage-${process.pid}.ts`)
writeFileSync(
  file,
  block.replace('"mycelium-runtime/adapter-kit"', JSON.stringify(resolve("src/adapter-kit.ts"))),
)
const { MapStorage } = (await import(pathToFileURL(file).href)) as { MapStorage: new () => LedgerStorage }

testLedgerStorage("docs/adapter-kit.md MapStorage", () => ({ storage: new MapStorage() }))
