// Differential check of the transition key: random arguments, scopes, bindings and tool-call ids, keyed by this
// package's ledger and by the real original's derive_transition_key_for_call. A key that differs is a call a
// redispatch from the other implementation would not find: it would run again. Part of `npm run interop:python`
// (scripts/python-interop.ts); INTEROP_KEY_SEED repeats a run, INTEROP_KEY_CASES sets its size (default 3,000).
import { spawnSync } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { seededRandom } from "../src/conformance/random.ts"
import {
  ActionLedger,
  type JsonValue,
  MemoryLedgerStorage,
  MissingRequestIdentityError,
  type SideEffectClass,
} from "../src/core/index.ts"
import { TaskIdAmbiguousError } from "../src/core/tasks/errors.ts"
import { deriveTaskRequestId } from "../src/core/tasks/identity.ts"
import type { Check } from "./python-interop-config.ts"
import { pythonEnv } from "./python-interop-stores.ts"

const here = dirname(fileURLToPath(import.meta.url))

/** The conformance sequences' seeded generator: a failing run can be repeated from its seed. */
export const generator = seededRandom

// Characters where implementations part ways: escapes, non-ASCII, astral (sorted by code point, not UTF-16 unit),
// the U+E000..U+FFFF block, lone surrogates, line separators, NUL.
const ALPHABET = [
  ..."abcXYZ019 _-:./\\\"'",
  "\n",
  "\t",
  "\u0000",
  "\u007f",
  "é",
  "ß",
  "\u2028",
  "\u2029",
  "\ufeff",
  "\uffff",
  "\ue000",
  "漢",
  "😀",
  "𝄞",
  "\ud800",
  "\udfff",
]

export function values(rand: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T
  const text = (): string => {
    let s = ""
    for (let n = Math.floor(rand() * 8); n > 0; n--) s += pick(ALPHABET)
    return s
  }
  // Numbers JSON carries the same to both sides: JavaScript cannot tell 1 from 1.0, so an integral value is an int
  // on both (docs/keys.md); fractions, exponents both ways, and integers past 2^53 that a double holds exactly.
  const num = (): number =>
    pick([
      () => Math.floor(rand() * 2000) - 1000,
      () => (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20),
      () => 2 ** (53 + Math.floor(rand() * 20)) * (rand() < 0.5 ? 1 : -1),
      () => Number((rand() * 100).toFixed(Math.floor(rand() * 4) + 1)),
      () => pick([0.1, 1e-7, 1e-5, 1e21, 1e16 + 2, 123456789.125, Number.MAX_SAFE_INTEGER, 5e-324]),
    ])()
  const scalar = (): unknown => pick([text, num, () => rand() < 0.5, () => null, () => 0])()
  const value = (depth: number): unknown => {
    const r = rand()
    if (depth > 2 || r < 0.6) return scalar()
    if (r < 0.8) return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1))
    return object(depth + 1)
  }
  const object = (depth: number): Record<string, unknown> => {
    const o: Record<string, unknown> = {}
    for (let n = Math.floor(rand() * 4); n > 0; n--) o[text() || "k"] = value(depth)
    return o
  }
  return { pick, text, num, scalar, object }
}

interface Case {
  tool: string
  binding: {
    agent_id: string
    policy_version: string
    side_effect_class: SideEffectClass
    scope_from?: { thread_id?: string; run_id?: string; node?: string }
    key_param?: string
    request_id_from?: string
  }
  /** The arguments the tool gets (this package), and the original's kwargs: those plus tool_call_id. */
  args: Record<string, unknown>
  toolCallId: string
  /** Explicit scope ids (this package's call metadata; the original's kwargs of the same names). */
  meta: { thread_id?: string; run_id?: string; node?: string }
}

function cases(seed: number, count: number): Case[] {
  const rand = generator(seed)
  const v = values(rand)
  const out: Case[] = []
  for (let i = 0; i < count; i++) {
    const args = v.object(0)
    const binding: Case["binding"] = {
      agent_id: v.pick(["agent", "a-é", "😀"]),
      policy_version: v.pick(["1", "v2.0"]),
      side_effect_class: v.pick([
        "keyed_mutate",
        "non_idempotent_mutate",
        "idempotent_mutate",
        "irreversible",
        "read",
      ] as const),
    }
    if (rand() < 0.4) {
      binding.scope_from = { thread_id: "conversation" }
      if (rand() < 0.8) args.conversation = v.scalar()
    }
    if (rand() < 0.2) {
      binding.key_param = "idem"
      args.idem = v.text() || "k"
    }
    // A business key, with whitespace of either language around it (U+001F and U+0085 are Python's, U+FEFF JS's).
    if (rand() < 0.15) {
      binding.request_id_from = "order_id"
      const pad = () => v.pick(["", " ", "\x1f", "\x85", "\ufeff", "\u3000", "\t"])
      args.order_id = rand() < 0.9 ? pad() + v.text() + pad() : v.scalar()
    }
    const meta: Case["meta"] = {}
    for (const f of ["thread_id", "run_id", "node"] as const) if (rand() < 0.2) meta[f] = v.text()
    out.push({
      tool: v.pick(["charge", "send_email", "t"]),
      binding,
      args,
      toolCallId: `call_${v.text()}`,
      meta,
    })
  }
  return out
}

/**
 * JSON text that gives Python the value this side keys: an integer past 2^53 with every digit (JSON.stringify writes
 * the shortest digits, which Python reads as another int) and -0 as a float (JSON.stringify writes 0, an int).
 */
export function exactJson(v: unknown): string {
  if (typeof v === "number") {
    if (Object.is(v, -0)) return "-0.0"
    // From 1e21 both write an exponent, and Python reads it as the float this side keys it as.
    const digits = Number.isInteger(v) && !Number.isSafeInteger(v) && Math.abs(v) < 1e21
    return digits ? BigInt(v).toString() : JSON.stringify(v)
  }
  if (Array.isArray(v)) return `[${v.map(exactJson).join(",")}]`
  if (v && typeof v === "object")
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${exactJson(x)}`)
      .join(",")}}`
  return JSON.stringify(v)
}

interface TaskCase {
  task: string
  kwargs: Record<string, unknown>
  id_from: string[]
}

function taskCases(seed: number, count: number): TaskCase[] {
  const rand = generator(seed)
  const v = values(rand)
  const out: TaskCase[] = []
  for (let i = 0; i < count; i++) {
    const kwargs = v.object(0)
    const r = rand()
    // task_id and run_id take precedence; their values are written with Python's str(). A null one is no id here
    // (the original derives "None" for all of them: docs/tasks.md), so it is left out.
    const id = () => v.pick([v.text, v.num, () => rand() < 0.5])()
    if (r < 0.15) kwargs.task_id = id()
    else if (r < 0.3) kwargs.run_id = id()
    const names = Object.keys(kwargs)
    const id_from = rand() < 0.5 ? [] : [v.pick([...names, "absent"]), v.pick([...names, "absent"])]
    out.push({ task: v.pick(["nightly_report", "t"]), kwargs, id_from: [...new Set(id_from)] })
  }
  return out
}

/** What `agreement` compares for one case. */
export interface Agreement<C> {
  /** Its script beside this file: one JSON line in per case, one JSON answer out. */
  script: string
  cases: readonly C[]
  /** What the script reads for a case (default: the case itself). */
  input?: (c: C) => unknown
  /** This package's answer, or undefined for a case it refuses on purpose (counted, not compared). */
  ours: (c: C) => unknown
  /** Default: equal answers. */
  same?: (theirs: unknown, ours: unknown) => boolean
  /** The check's name, given how many cases were refused here. */
  label: (refused: number) => string
}

/**
 * Every case through the original (one python3 run of `script`) and through this package: one check that holds
 * when every answer agrees, with the first differences as its detail.
 */
export async function agreement<C>(src: string, a: Agreement<C>, check: Check): Promise<void> {
  const py = spawnSync("python3", [join(here, "python", a.script)], {
    input: a.cases.map((c) => exactJson(a.input ? a.input(c) : c)).join("\n"),
    encoding: "utf8",
    env: pythonEnv(src),
    maxBuffer: 64 * 1024 * 1024,
  })
  const lines = py.stdout.trim().split("\n")
  if (py.status !== 0 || lines.length !== a.cases.length) {
    check(a.label(0), false, { original: py.stderr.trim().split("\n").slice(-3) })
    return
  }
  const same = a.same ?? ((x, y) => x === y)
  const differ: unknown[] = []
  let refused = 0
  for (const [i, c] of a.cases.entries()) {
    const theirs = JSON.parse(lines[i] as string) as unknown
    let ours: unknown
    try {
      ours = await a.ours(c)
    } catch (e) {
      ours = `error: ${(e as Error).message}`
    }
    if (ours === undefined) refused++
    else if (!same(theirs, ours)) differ.push({ case: i, py: theirs, ts: ours, input: c })
  }
  check(a.label(refused), differ.length === 0, { differ: differ.length, first: differ.slice(0, 3) })
}

async function tsKey(c: Case): Promise<string> {
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  const b = c.binding
  const tool = ledger.tool(
    {
      name: c.tool,
      binding: {
        agentId: b.agent_id,
        policyVersion: b.policy_version,
        sideEffectClass: b.side_effect_class,
        ...(b.scope_from && { scopeFrom: b.scope_from }),
        ...(b.key_param && { providerIdempotencyKeyParam: b.key_param }),
        ...(b.request_id_from && { requestIdFrom: b.request_id_from }),
      },
    },
    async () => "ok",
  )
  try {
    await tool(c.args, {
      toolCallId: c.toolCallId,
      ...(c.meta.thread_id !== undefined && { threadId: c.meta.thread_id }),
      ...(c.meta.run_id !== undefined && { runId: c.meta.run_id }),
      ...(c.meta.node !== undefined && { node: c.meta.node }),
    })
  } catch (e) {
    if (e instanceof MissingRequestIdentityError) return "MISSING"
    throw e
  }
  for await (const e of storage.list()) return e.requestId
  throw new Error("no row")
}

/** The run's seed: INTEROP_KEY_SEED, else a new one (printed with each check, to repeat a failure). */
export const keySeed = (): number => Number(process.env.INTEROP_KEY_SEED ?? Date.now() % 2 ** 31)

export async function keyChecks(src: string, seed: number, check: Check): Promise<void> {
  const count = Number(process.env.INTEROP_KEY_CASES ?? 3000)
  await agreement(
    src,
    {
      script: "original-keys.py",
      cases: cases(seed, count),
      input: (c) => ({
        tool: c.tool,
        binding: c.binding,
        kwargs: { ...c.args, ...c.meta, tool_call_id: c.toolCallId },
      }),
      ours: tsKey,
      label: () => `keys: ${count} random calls (seed ${seed}) keyed alike by both`,
    },
    check,
  )
  // Task request ids: task_id, run_id, id_from values and the arguments' hash.
  await agreement(
    src,
    {
      script: "original-keys.py",
      cases: taskCases(seed, count),
      ours: (t) => {
        try {
          return deriveTaskRequestId({
            task: t.task,
            kwargs: t.kwargs as Record<string, JsonValue>,
            idFrom: t.id_from,
          })
        } catch (e) {
          // A value that would forge another argument set's id is refused here (docs/python-differences.md).
          if (e instanceof TaskIdAmbiguousError) return undefined
          throw e
        }
      },
      label: (refused) =>
        `task ids: ${count} random tasks (seed ${seed}) given the same id by both (${refused} refused here)`,
    },
    check,
  )
}
