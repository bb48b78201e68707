// No promise handed back to be adopted where it may already be rejected, in the source that runs outside Node:
// workerd reports one as uncaught (an error in the user's logs, a failed run under vitest-pool-workers) when an
// async function returns it or a then() callback does, handled or not (test/workers/uncaught.ts). `return await p`,
// or an async function that awaits what it chains after (858efa7), is not reported.
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"
import { type HandBack, handBacks } from "./handed-back.ts"

// Node-only: the CLI, the Node entries, the file and Redis adapters, the workspace. Every file importing a node:
// built-in must be one of them (checked below), except node:async_hooks, which Workers have with nodejs_compat.
const NODE_ONLY = /^src\/(cli\/|node[./]|adapters\/(file|redis)|harness\/workspace\/)/
const NODE_IMPORT = /from\s*["']node:(?!async_hooks["'])/

/**
 * Sites that hand back a promise which cannot be rejected when it is handed back, each with why, and how many sites
 * the key covers. Most are the ledger's hot path, where an `await` is bytes the core entry's budget lacks.
 */
const EXCEPTIONS: Record<string, { sites: number; why: string }> = {
  "src/core/ledger/engine/claim.ts claimLoop: return own()": {
    sites: 3,
    why: "own() first awaits checkDispatchSiblings(), an async function given locals: pending when returned",
  },
  "src/core/ledger/engine/claim.ts claimLoop.claim: return own()": { sites: 1, why: "as claimLoop's own()" },
  "src/core/ledger/engine/claim.ts claimLoop.hardBlock: return own()": {
    sites: 1,
    why: "as claimLoop's own()",
  },
  "src/core/ledger/engine/claim.ts settle: return … ? {…} : reread()": {
    sites: 3,
    why: "reread() first awaits core.store.get(): SafeStorage turns a throw into a rejection, so it is pending",
  },
  "src/core/ledger/engine/claim.ts settleOrBlock: return reread()": { sites: 1, why: "as settle's reread()" },
  "src/core/ledger/engine/fenced.ts outcomeCas: return casFrom()": {
    sites: 1,
    why: "casFrom() first awaits core.store.tryTransition() (SafeStorage, which never throws): pending when returned",
  },
  "src/core/ledger/engine/fenced.ts renewHeld: return casFrom()": {
    sites: 1,
    why: "as outcomeCas's casFrom()",
  },
  "src/core/ledger/engine/fenced.ts casFrom: return redo()": {
    sites: 1,
    why:
      "redo is failHeld(), which returns casFrom() or outcomeCas() (its first await is sealRow(), async, caught): " +
      "pending; a failHeld() that throws rejects casFrom's own promise, which its caller already awaits",
  },
  "src/core/ledger/action-ledger.ts ActionLedger.#held.run: then(cb) async () => …": {
    sites: 1,
    why: "the callback first awaits heldRow(), an async function given fields and parameters: pending when taken",
  },
  "src/core/context/tool-cache.ts ToolCache.getOrLoad: return pending.run": {
    sites: 1,
    why: "a flight's promise gets its catch() when it is made: rejected, it is handled, which workerd does not report",
  },
  "src/core/context/tool-cache.ts ToolCache.getOrLoad: return flight.run": {
    sites: 1,
    why: "as pending.run",
  },
  "src/core/config/mycelium-config.ts MyceliumConfig.#open: then(cb) storeOf": {
    sites: 1,
    why: "storeOf is #open's callers' synchronous pick of what close() closes ((s) => s, (flush) => flush?.storage)",
  },
  "src/edge/client.ts RemoteCall.#send.run: then(cb) async () => …": {
    sites: 1,
    why: "the callback reads clocks() and then awaits #post(), an async method: pending when taken (the client is 1 B under its budget)",
  },
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return sourceFiles(p)
    return /\.(ts|mts)$/.test(name) && !name.endsWith(".d.ts") ? [p] : []
  })
}

function compilerOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    "tsconfig.json",
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"))
      },
    },
  )
  if (!parsed) throw new Error("tsconfig.json unreadable")
  return parsed.options
}

/** Counts per key, so the list's counts compare as one object. */
const countKeys = (found: readonly HandBack[]): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const f of found) out[f.key] = (out[f.key] ?? 0) + 1
  return out
}

describe("promises handed back already rejected (workerd reports them uncaught)", () => {
  it("none in the runtime-neutral source, but the listed exceptions", () => {
    const all = sourceFiles("src")
    const files = all.filter((f) => !NODE_ONLY.test(f))
    const nodeImports = files.filter((f) => NODE_IMPORT.test(readFileSync(f, "utf8")))
    expect(nodeImports).toEqual([])
    expect(files.length).toBeGreaterThan(150)
    expect(all.length - files.length).toBeGreaterThan(20)
    const program = ts.createProgram([...files, "src/types/cloudflare-workers.d.ts"], compilerOptions())
    const found = handBacks(program, files, process.cwd())
    const listed = Object.fromEntries(Object.entries(EXCEPTIONS).map(([k, v]) => [k, v.sites]))
    const unlisted = found.filter((f) => !(f.key in EXCEPTIONS)).map((f) => `${f.at} ${f.key}`)
    expect(unlisted).toEqual([])
    // An exception whose site is gone, or that now covers more sites, is stale.
    expect(countKeys(found)).toEqual(listed)
  })

  it("the walk finds each shape, by type, and passes the awaited forms", () => {
    const source = `
      declare function later(): Promise<number>
      declare const body: (a: number) => unknown
      function sync(v: unknown): unknown { return v }
      declare const chain: Promise<void>
      export async function plain() { return later() }
      export async function branch(f: boolean) { return f ? 1 : later() }
      export const arrow = async () => later()
      export const handed = async () => body(1)
      export const thenAsync = () => chain.then(async () => 1)
      export const thenReturns = () => chain.then(() => later())
      export const thenRef = () => chain.then(later)
      export const catchRejects = () => chain.catch((e: unknown) => Promise.reject(e))
      export async function awaited() { return await later() }
      export async function value() { return sync(await later()) }
      export async function nested() { const f = () => later(); return 1 + (await f()) }
      export function notAsync() { return later() }
      export const iife = () => (async () => { await chain; return await later() })()
      export const thenValue = () => chain.then(() => 1)
    `
    const file = join(process.cwd(), "virtual/shapes.ts")
    const host = ts.createCompilerHost({ strict: true, target: ts.ScriptTarget.ES2022, noEmit: true })
    const getSourceFile = host.getSourceFile
    host.getSourceFile = (name, version, ...rest) =>
      name === file
        ? ts.createSourceFile(name, source, version, true)
        : getSourceFile.call(host, name, version, ...rest)
    const program = ts.createProgram(
      [file],
      { strict: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], noEmit: true },
      host,
    )
    expect(handBacks(program, [file], process.cwd()).map((f) => f.key)).toEqual([
      "virtual/shapes.ts plain: return later()",
      "virtual/shapes.ts branch: return … ? 1 : later()",
      "virtual/shapes.ts arrow: => later()",
      "virtual/shapes.ts handed: => body()",
      "virtual/shapes.ts thenAsync: then(cb) async () => …",
      "virtual/shapes.ts thenReturns: then(cb) () => …",
      "virtual/shapes.ts thenRef: then(cb) later",
      "virtual/shapes.ts catchRejects: catch(cb) () => …",
    ])
  })
})
