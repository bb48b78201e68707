// One error system: every error class any entry exports extends MyceliumError and carries a snake_case code.
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { MyceliumError } from "../../src/core/errors.ts"

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  exports: Record<string, string | { default: string }>
}
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/

// The Durable Object entry needs workerd (`cloudflare:workers`); its module is checked by the source scan below.
const entries = Object.entries(pkg.exports)
  .filter(([name, t]) => typeof t !== "string" && !name.includes("durable-object"))
  .map(([name, t]) => [
    name,
    (t as { default: string }).default.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"),
  ])

function errorClasses(mod: Record<string, unknown>): Array<[string, new (...a: unknown[]) => Error]> {
  return Object.entries(mod).filter(
    (e): e is [string, new (...a: unknown[]) => Error] =>
      typeof e[1] === "function" && (e[1] as { prototype?: unknown }).prototype instanceof Error,
  )
}

// Minimal arguments: the same snake_case word for every parameter (status, code, message), else a list or an
// init object first (a list of problems, a run result).
function construct(C: new (...a: unknown[]) => Error): MyceliumError {
  const w = "bad_input"
  for (const args of [
    [w, w, w],
    [[], w, w],
    [{ failure: { reason: w, message: w }, usage: {} }, w, w],
  ]) {
    try {
      return new C(...args) as MyceliumError
    } catch {}
  }
  throw new Error(`${C.name}: no minimal arguments construct it`)
}

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n)
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith(".ts") ? [p] : []
  })

describe("error classes", () => {
  it("every exported error class extends MyceliumError and has a snake_case code", async () => {
    const seen = new Set<string>()
    for (const [name, file] of entries) {
      // The entry list is computed (package.json), so Vite cannot resolve the import statically; it need not.
      const mod = (await import(/* @vite-ignore */ `../../${file}`)) as Record<string, unknown>
      for (const [cls, C] of errorClasses(mod)) {
        seen.add(cls)
        expect(C === MyceliumError || C.prototype instanceof MyceliumError, `${name}: ${cls}`).toBe(true)
        const e = construct(C)
        expect(e.code, `${name}: ${cls}.code`).toMatch(SNAKE)
        expect(e.name, `${name}: ${cls}.name`).toBe(cls)
      }
    }
    // The list is not empty by accident: the roots and errors of every area are among them.
    for (const cls of [
      "MyceliumError",
      "LedgerError",
      "MissingRequestIdentityError",
      "ToolCapabilityDeclarationError",
      "ToolBoundaryError",
      "MessageValidationError",
      "HistoryTruncatedError",
      "ContextGuardConfigError",
      "LedgerFileCorruptError",
      "UpstashReplyError",
      "NeonSchemaMissingError",
      "LedgerHttpError",
      "AuthError",
      "HttpError",
    ])
      expect(seen, cls).toContain(cls)
  })

  it("every error class the library declares is exported by an entry, so callers can catch it by class", async () => {
    // The CLI's own errors end in an exit code and a message; they are not part of the library.
    const declared = sourceFiles("src")
      .filter((f) => !f.startsWith(join("src", "cli")))
      .flatMap((f) =>
        [...readFileSync(f, "utf8").matchAll(/export class (\w+Error) extends/g)].map((m) => m[1]),
      )
    const exported = new Set<string>()
    for (const [, file] of entries) {
      const mod = (await import(/* @vite-ignore */ `../../${file}`)) as Record<string, unknown>
      for (const k of Object.keys(mod)) exported.add(k)
    }
    // Durable Object entries load only in workerd: their export lists are read from source.
    for (const [name, t] of Object.entries(pkg.exports)) {
      if (typeof t === "string" || !name.includes("durable-object")) continue
      const file = t.default.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")
      for (const m of readFileSync(file, "utf8").matchAll(/\b(\w+Error)\b/g)) exported.add(m[1] as string)
    }
    expect(declared.length).toBeGreaterThan(40)
    expect(declared.filter((c) => !exported.has(c as string))).toEqual([])
  })

  it("no class under src/ extends a built-in error except the root", () => {
    const offenders = sourceFiles("src").flatMap((f) =>
      [...readFileSync(f, "utf8").matchAll(/class (\w+) extends (Error|TypeError|RangeError)\b/g)]
        .filter((m) => m[1] !== "MyceliumError")
        .map((m) => `${f}: ${m[1]}`),
    )
    expect(offenders).toEqual([])
  })

  it("options the ledger refuses are typed errors with code invalid_option", async () => {
    const { ActionLedger, LedgerConfigError } = await import("../../src/core/index.ts")
    const bad = () => new ActionLedger({ onArgsDrift: "sometimes" as never })
    expect(bad).toThrow(LedgerConfigError)
    expect(bad).toThrow(/onArgsDrift must be one of off, soft, hard/)
    const ledger = new ActionLedger({ onWarning: () => {} })
    expect(() => ledger.tool({ name: "" }, async () => 1)).toThrow(
      expect.objectContaining({ code: "invalid_option" }),
    )
    expect(() =>
      ledger.tool(
        // A JavaScript caller's typo: the type refuses it, the runtime must too.
        { name: "t", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "teleport" as never } },
        () => 1,
      ),
    ).toThrow(expect.objectContaining({ code: "invalid_option" }))
  })
})
