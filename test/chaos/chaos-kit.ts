// What the chaos tests share: their logs, read back, and the bundling that lets a killed process come back fast.
import type { ChildProcess } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { build, type Plugin } from "esbuild"
import { nodeBundle } from "../node-bundle.ts"

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * A stall, not a death: SIGSTOP past a 1 s lease, SIGCONT 1.5-2.5 s later to whatever `proc()` then names (nothing
 * once it was killed meanwhile). Resolves when it is continued.
 */
export function stall(proc: () => ChildProcess | undefined): Promise<void> {
  proc()?.kill("SIGSTOP")
  return sleep(1500 + Math.random() * 1000).then(() => {
    proc()?.kill("SIGCONT")
  })
}

/** A log's whole lines: a process killed mid-append leaves a last line without its end. */
export const lines = (file: string): string[] =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l.endsWith(" ") === false && l)
    : []

/** The provider's records: every execution of the effect, by request id. */
export function providerRecords(file: string): Map<string, string[]> {
  const m = new Map<string, string[]>()
  for (const l of lines(file)) {
    const [id, ref] = l.split(" ")
    if (!id || !ref) continue
    m.set(id, [...(m.get(id) ?? []), ref])
  }
  return m
}

/**
 * Imports of `packages` left out of the bundle and pointed at this repository's copy: a package that finds its own
 * files next to its code (Miniflare and its workerd binary) cannot be bundled, and `outdir` has no node_modules.
 */
function linked(packages: readonly string[]): Plugin {
  const require = createRequire(import.meta.url)
  return {
    name: "linked",
    setup(b) {
      b.onResolve({ filter: new RegExp(`^(${packages.join("|")})$`) }, (a) => ({
        path: pathToFileURL(require.resolve(a.path)).href,
        external: true,
      }))
    },
  }
}

/** Bundles each entry once into `outdir` as `<name>.mjs`, so a respawned process boots in tens of milliseconds. */
export async function bundleScripts(
  entryPoints: Record<string, string>,
  outdir: string,
  external: readonly string[] = [],
): Promise<void> {
  await build({
    ...nodeBundle,
    entryPoints,
    plugins: external.length ? [linked(external)] : [],
    outdir,
    outExtension: { ".js": ".mjs" },
  })
}
