// docs/http-api.md against what the app publishes (/openapi.json, built from the schemas the routes validate with,
// and the one code table): the routes it names, the scope each needs, the fields of each body and query, and the
// status of each error code. scope-matrix.test.ts holds the app to DOCUMENTED_ROUTES' scopes; this holds the page.
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, DOCUMENTED_ROUTES } from "../../src/edge/index.ts"
import { HTTP_STATUS_BY_CODE, statusForCode } from "../../src/edge/status.ts"

const page = readFileSync(new URL("../../docs/http-api.md", import.meta.url), "utf8")

interface Operation {
  security: { bearer: string[] }[]
  parameters?: { name: string; in: string }[]
  requestBody?: { content: { "application/json": { schema: JsonSchema } } }
  responses: Record<string, unknown>
}
interface JsonSchema {
  properties?: Record<string, JsonSchema>
  required?: string[]
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
}

async function published() {
  const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
  const doc = (await (await app.request("/openapi.json")).json()) as {
    paths: Record<string, Record<string, Operation>>
  }
  const ops = Object.entries(doc.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  )
  return { app, ops }
}

/** `METHOD /path` (and `GET|PUT /path`) as the page writes them in code spans, queries cut off. */
function routesOnPage(): Set<string> {
  const out = new Set<string>()
  for (const m of page.matchAll(/`((?:GET|POST|PUT)(?:\|(?:GET|POST|PUT))*) (\/[^`?\s]*)/g)) {
    const path = (m[2] as string).replace(/[…]$/, "")
    if (path.endsWith("/") || path.endsWith("…")) continue
    for (const method of (m[1] as string).split("|")) out.add(`${method} ${path}`)
  }
  return out
}

/** The names in a `{ a, b?, c: … }` span: top-level keys, `?` marking the optional ones. */
function fieldsOf(span: string): Map<string, boolean> {
  let flat = span.replace(/"[^"]*"/g, "")
  for (let prev = ""; prev !== flat; ) {
    prev = flat
    flat = flat.replace(/\{[^{}]*\}/g, (m, at: number) => (at === 0 ? m : ""))
  }
  const out = new Map<string, boolean>()
  for (const part of flat.replace(/^\{|\}$/g, "").split(","))
    for (const m of part.matchAll(/^\s*([a-z_]+)(\?)?/g)) out.set(m[1] as string, m[2] !== "?")
  return out
}

/** The body fields the page gives right after a route, e.g. "`POST /v1/transitions/{id}/release` `{ … }`". */
function bodyOnPage(method: string, path: string): Map<string, boolean> | null {
  const at = page.indexOf(`\`${method} ${path}\``)
  if (at < 0) return null
  const m = /^`[^`]*`\s*`(\{[\s\S]*?\})`/.exec(page.slice(at))
  return m ? fieldsOf((m[1] as string).replace(/\s+/g, " ")) : null
}

const requiredOf = (s: JsonSchema) =>
  new Map(Object.keys(s.properties ?? {}).map((k) => [k, (s.required ?? []).includes(k)]))

describe("docs/http-api.md and the published contract", () => {
  it("names every route the app serves, and no other", async () => {
    const { ops } = await published()
    const served = new Set(ops.map((o) => `${o.method} ${o.path}`))
    expect(served).toEqual(new Set(DOCUMENTED_ROUTES.map((r) => `${r.method.toUpperCase()} ${r.path}`)))
    expect([...served].filter((r) => !routesOnPage().has(r))).toEqual([])
    expect([...routesOnPage()].filter((r) => !served.has(r))).toEqual([])
  })

  it("gives each route the scope its table names, as /openapi.json does", async () => {
    const { ops } = await published()
    // | `ledger:agent` | may | `/v1/calls…` |: a trailing … is a prefix, a leading method narrows it.
    const table = [...page.matchAll(/^\| `ledger:(\w+)` \|[^|]*\| (.*) \|$/gm)].map((m) => ({
      scope: m[1] as string,
      patterns: [...(m[2] as string).matchAll(/`(?:(GET|POST|PUT) )?(\/[^`]*)`/g)].map((p) => ({
        method: p[1],
        path: p[2] as string,
      })),
    }))
    expect(table.map((t) => t.scope)).toEqual(["agent", "reader", "operator", "store"])
    for (const o of ops.filter((x) => x.path.startsWith("/v1/"))) {
      const route = `${o.method} ${o.path}`
      const scopes = table
        .filter((t) =>
          t.patterns.some(
            (p) =>
              (!p.method || p.method === o.method) &&
              (p.path.endsWith("…") ? o.path.startsWith(p.path.slice(0, -1)) : o.path === p.path),
          ),
        )
        .map((t) => t.scope)
      expect(scopes, route).toHaveLength(1)
      expect(o.op.security, route).toEqual([{ bearer: [`ledger:${scopes[0]}`] }])
    }
    for (const o of ops.filter((x) => !x.path.startsWith("/v1/"))) expect(o.op.security, o.path).toEqual([])
  })

  it("lists the fields each body takes, and which are optional", async () => {
    const { ops } = await published()
    const body = (method: string, path: string) => {
      const s = ops.find((o) => o.method === method && o.path === path)?.op.requestBody?.content[
        "application/json"
      ].schema
      if (!s) throw new Error(`no body for ${method} ${path}`)
      return s
    }
    for (const [method, path] of [
      ["POST", "/v1/transitions/{id}/release"],
      ["POST", "/v1/transitions/{id}/mark-worker-dead"],
      ["POST", "/v1/rows/{id}/claim"],
      ["POST", "/v1/rows/{id}/transition"],
      ["POST", "/v1/receipts/verify"],
    ] as const) {
      const documented = bodyOnPage(method, path)
      const schema = requiredOf(body(method, path))
      // A claim's `now` is accepted from older clients and ignored: the page says so in words.
      if (path.endsWith("/claim")) schema.delete("now")
      expect(documented, `${method} ${path}`).toEqual(schema)
    }
    // Holder routes: { fence, lease } on every body, the rest in the table's body column.
    const holder = [...page.matchAll(/^\| `POST (\/v1\/calls\/\{id\}\/\w+)` \| (.*?) \|[^|]*\|$/gm)]
    expect(holder.map((m) => m[1])).toEqual([
      "/v1/calls/{id}/boundary",
      "/v1/calls/{id}/complete",
      "/v1/calls/{id}/fail",
      "/v1/calls/{id}/renew",
    ])
    for (const [, path, column] of holder) {
      const names = new Set([...(column as string).matchAll(/`(\w+)\??(?::[^`]*)?`/g)].map((m) => m[1]))
      const s = body("POST", path as string)
      const variants = s.anyOf ?? s.oneOf ?? [s]
      const keys = new Set(variants.flatMap((v) => Object.keys(v.properties ?? {})))
      expect(keys, path).toEqual(new Set(["fence", "lease", ...names]))
    }
    // Begin: the example's keys, then the binding and meta fields the page lists.
    const begin = body("POST", "/v1/calls")
    const example = /### `POST \/v1\/calls`[\s\S]*?```json\n([\s\S]*?)```/.exec(page)?.[1] ?? "{}"
    expect(new Set(Object.keys(begin.properties ?? {}))).toEqual(
      new Set([...Object.keys(JSON.parse(example)), "lease_ttl"]),
    )
    const listed = (label: string) => {
      const line =
        new RegExp(`${label}(?: fields)?: ((?:\`\\w+\`(?: \\(required\\))?,?\\s*)+)`).exec(page)?.[1] ?? ""
      return new Set([...line.matchAll(/`(\w+)`/g)].map((m) => m[1]))
    }
    expect(listed("`binding`")).toEqual(new Set(Object.keys(begin.properties?.binding?.properties ?? {})))
    expect(listed("`meta`")).toEqual(new Set(Object.keys(begin.properties?.meta?.properties ?? {})))
  })

  it("lists the query parameters of each list route", async () => {
    const { ops } = await published()
    for (const path of ["/v1/transitions", "/v1/rows", "/v1/receipts"]) {
      const op = ops.find((o) => o.method === "GET" && o.path === path)?.op
      const names = new Set((op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name))
      const onPage = new Set<string>()
      for (const m of page.matchAll(new RegExp(`\`GET ${path.replace(/\//g, "\\/")}\\?([^\`]*)\``, "g")))
        for (const q of (m[1] as string).matchAll(/(?:^|&)(\w+)=/g)) onPage.add(q[1] as string)
      expect(onPage, path).toEqual(names)
    }
  })

  it("gives each error code the status the code table answers with", async () => {
    const { ops } = await published()
    const table = new Map<string, number>()
    // The Errors section only: the local server's own codes (mycelium serve) come later.
    const errors = /^## Errors$([\s\S]*?)^## /m.exec(page)?.[1] ?? ""
    // The codes, not the words in parentheses after them ("no `exp`").
    for (const m of errors.matchAll(/^\| (\d{3}) \| (.*) \|$/gm))
      for (const c of (m[2] as string).replace(/\([^)]*\)/g, "").matchAll(/`([a-z_]+)`/g))
        table.set(c[1] as string, Number(m[1]))
    for (const m of errors.matchAll(/(\d{3}) `([a-z_]+)`/g)) table.set(m[2] as string, Number(m[1]))
    for (const [code, status] of table) expect(statusForCode(code), code).toBe(status)
    for (const [code, status] of Object.entries(HTTP_STATUS_BY_CODE))
      expect(table.get(code), code).toBe(status)
    // And each route declares every error status the table can answer with (500 is a bug, not a contract).
    const statuses = new Set(
      Object.values(HTTP_STATUS_BY_CODE)
        .filter((s) => s !== 500)
        .map(String),
    )
    statuses.add(String(statusForCode("ledger_stale_fence"))) // every other package code: 409
    for (const o of ops.filter((x) => x.path.startsWith("/v1/")))
      expect(
        new Set(Object.keys(o.op.responses).filter((s) => s !== "200")),
        `${o.method} ${o.path}`,
      ).toEqual(statuses)
  })
})
