// Deno glue: what the shared test modules import as "vitest", mapped onto `Deno.test` (deno.json's import map
// points "vitest" here). Every `it` becomes one Deno test named "describe > … > it"; hooks keep vitest's order
// (beforeAll before a suite's first test, afterAll after its last, beforeEach/afterEach around each test, outer
// first). Assertions are vitest's own `expect` (@vitest/expect on chai), so a matcher means the same here.
import {
  ChaiStyleAssertions,
  chai,
  type ExpectStatic,
  GLOBAL_EXPECT,
  getState,
  JestAsymmetricMatchers,
  JestChaiExpect,
  JestExtend,
  setState,
} from "@vitest/expect"
import { fn, spyOn } from "@vitest/spy"

declare const Deno: {
  test(options: {
    name: string
    fn: () => Promise<void>
    sanitizeOps: boolean
    sanitizeResources: boolean
  }): void
}

type Hook = () => unknown

interface Suite {
  readonly name: string
  readonly parent: Suite | null
  readonly beforeAll: Hook[]
  readonly afterAll: Hook[]
  readonly beforeEach: Hook[]
  readonly afterEach: Hook[]
  /** Tests under this suite (any depth) not yet run: afterAll runs when it reaches zero. */
  pending: number
  started: boolean
}

const newSuite = (name: string, parent: Suite | null): Suite => ({
  name,
  parent,
  beforeAll: [],
  afterAll: [],
  beforeEach: [],
  afterEach: [],
  pending: 0,
  started: false,
})

// A module's top-level hooks belong to that module: the root suite is per test module, found from the stack
// (the deepest *.test.ts frame is the module being evaluated, even when a helper such as the conformance suite
// calls describe for it).
const roots = new Map<string, Suite>()
function moduleRoot(): Suite {
  const frames = (new Error().stack ?? "").split("\n")
  const file =
    frames
      .map((l) => /(file:\/\/[^\s)]+?\.test\.ts)/.exec(l)?.[1])
      .filter((f): f is string => Boolean(f))
      .at(-1) ?? "unknown"
  const root = roots.get(file) ?? newSuite("", null)
  roots.set(file, root)
  return root
}

let current: Suite | null = null
const scope = (): Suite => current ?? moduleRoot()

function chain(s: Suite): Suite[] {
  const out: Suite[] = []
  for (let x: Suite | null = s; x; x = x.parent) out.unshift(x)
  return out
}

export function describe(name: string, body: () => void): void {
  const suite = newSuite(name, scope())
  const prev = current
  current = suite
  try {
    body()
  } finally {
    current = prev
  }
}

/** Thrown by the test context's `skip(reason)`: the test stops there and is reported as skipped, not failed. */
class Skipped extends Error {}

/** The part of vitest's test context the shared modules use. */
export interface TestContext {
  skip(note?: string): never
}

export function it(name: string, body: (ctx: TestContext) => unknown, _timeout?: number): void {
  const suite = scope()
  const suites = chain(suite)
  for (const s of suites) s.pending++
  const fullName = [...suites.map((s) => s.name).filter(Boolean), name].join(" > ")
  Deno.test({
    name: fullName,
    // The ledger's lease timers and the stores' handles outlive single tests by design (vitest does not check).
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      try {
        for (const s of suites) {
          if (s.started) continue
          s.started = true
          for (const h of s.beforeAll) await h()
        }
        for (const s of suites) for (const h of s.beforeEach) await h()
        try {
          resetExpectState()
          await body({
            skip(note) {
              throw new Skipped(note)
            },
          })
        } catch (e) {
          // Deno has no runtime skip: the line is counted as skipped by scripts/runtime-suites.mjs.
          if (!(e instanceof Skipped)) throw e
          console.log(`skipped: ${fullName} (${e.message})`)
        } finally {
          for (const s of [...suites].reverse()) for (const h of s.afterEach) await h()
        }
      } finally {
        for (const s of [...suites].reverse()) {
          if (--s.pending === 0) for (const h of s.afterAll) await h()
        }
      }
    },
  })
}
export const test = it

/**
 * vitest's `it.each` titles: its printf subset (%s %d %i %j %o %%) for array rows, `$key` (and `$a.b`) for an
 * object row.
 */
function title(template: string, row: unknown): string {
  if (!Array.isArray(row)) {
    return template.replace(/\$([\w.]+)/g, (_m, path: string) => {
      const v = path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown> | null)?.[k], row)
      return typeof v === "string" ? v : (JSON.stringify(v) ?? String(v))
    })
  }
  let i = 0
  return template.replace(/%[sdijo%]/g, (m) => {
    if (m === "%%") return "%"
    const v = row[i++]
    return m === "%j" || m === "%o" ? JSON.stringify(v) : String(v)
  })
}

/** vitest spreads an array row into the body's arguments and passes any other row as the one argument. */
const argsOf = (row: unknown): unknown[] => (Array.isArray(row) ? row : [row])

it.each =
  <T>(rows: readonly T[]) =>
  (name: string, body: (...args: never[]) => unknown, timeout?: number) => {
    for (const r of rows) it(title(name, r), () => body(...(argsOf(r) as never[])), timeout)
  }

describe.each =
  <T>(rows: readonly T[]) =>
  (name: string, body: (...args: never[]) => void) => {
    for (const r of rows) describe(title(name, r), () => body(...(argsOf(r) as never[])))
  }

export const beforeAll = (h: Hook) => void scope().beforeAll.push(h)
export const afterAll = (h: Hook) => void scope().afterAll.push(h)
export const beforeEach = (h: Hook) => void scope().beforeEach.push(h)
export const afterEach = (h: Hook) => void scope().afterEach.push(h)

chai.use(JestExtend)
chai.use(JestChaiExpect)
chai.use(ChaiStyleAssertions)
chai.use(JestAsymmetricMatchers)

export const expect = ((value: unknown, message?: string) => {
  const { assertionCalls } = getState(expect)
  setState({ assertionCalls: assertionCalls + 1 }, expect)
  return chai.expect(value, message)
}) as unknown as ExpectStatic
Object.assign(expect, chai.expect)
Object.assign(expect, (globalThis as Record<symbol, unknown>)[Symbol.for("asymmetric-matchers-object")])
expect.getState = () => getState(expect)
expect.setState = (s) => setState(s, expect)
;(globalThis as Record<symbol, unknown>)[GLOBAL_EXPECT] = expect

function resetExpectState(): void {
  setState(
    {
      assertionCalls: 0,
      isExpectingAssertions: false,
      isExpectingAssertionsError: null,
      expectedAssertionsNumber: null,
      expectedAssertionsNumberErrorGen: null,
    },
    expect,
  )
}
resetExpectState()

export const vi = { fn, spyOn }
