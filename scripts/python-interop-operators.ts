// An operator on one side settles a transition the other side's worker left hard-blocked, and both sides' workers
// honour the verdict: `completed` is replayed with the operator's result, `not_executed` runs exactly once more.
// This package's operator is its command line (`mycelium transitions release`), the original's its
// `ActionLedger.release()`. Part of `npm run interop:python` (scripts/python-interop.ts).
import { spawnSync } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Check } from "./python-interop-config.ts"
import { same } from "./python-interop-config.ts"
import { ledgerOf, type Outcome, pythonEnv, type SharedStore } from "./python-interop-stores.ts"

type Side = "python" | "typescript"
/** One call of `send_payment` through one side (`crash`: killed inside its side effect; returns null then). */
export type Call = (
  side: Side,
  cls: string,
  callId: string,
  amount: number,
  crash?: boolean,
) => Outcome | null

const here = dirname(fileURLToPath(import.meta.url))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The store flags `mycelium transitions` takes for a shared store. */
function cliStoreFlags(spec: Record<string, string>): string[] {
  if (spec.kind === "redis") return ["--redis-url", spec.url as string, "--prefix", spec.prefix as string]
  if (spec.kind === "postgres") return ["--postgres-dsn", spec.dsn as string, "--table", spec.table as string]
  return ["--file", spec.path as string, "--python-lock"]
}

function tsRelease(
  spec: Record<string, string>,
  id: string,
  verified: string,
  result: unknown,
): { ok: boolean; out: string } {
  const args = [
    "--import",
    "tsx",
    join(here, "..", "src", "cli", "main.ts"),
    "transitions",
    "release",
    id,
    "--verified",
    verified === "completed" ? "completed" : "not-executed",
    "--by",
    "ts-ops",
    "--reason",
    "checked the provider",
    ...(verified === "completed"
      ? ["--result-json", JSON.stringify(result)]
      : // A lapsed lease's not-executed verdict needs the owner's death signal here (docs/python-differences.md).
        ["--override-death-signal", "the interop run killed that worker"]),
    ...cliStoreFlags(spec),
  ]
  const r = spawnSync(process.execPath, args, { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } })
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}`.trim() }
}

function pyRelease(
  src: string,
  spec: Record<string, string>,
  id: string,
  verified: string,
  result: unknown,
): { ok: boolean; out: string } {
  const args = [join(here, "python", "original-operator.py"), JSON.stringify(spec), id, verified]
  if (verified === "completed") args.push(JSON.stringify(result))
  const r = spawnSync("python3", args, { encoding: "utf8", env: pythonEnv(src) })
  const line = r.stdout.trim().split("\n").at(-1) ?? ""
  const ok = r.status === 0 && line.includes('"error": null')
  return { ok, out: `${line}${r.stderr}`.trim() }
}

async function requestIdOf(spec: Record<string, string>, callId: string): Promise<string | null> {
  const storage = ledgerOf(spec)
  try {
    const rows = (await storage.findByDispatchId?.(callId)) ?? []
    return rows[0]?.requestId ?? null
  } finally {
    await storage.close?.()
  }
}

export async function operatorChecks(
  src: string,
  store: SharedStore,
  call: Call,
  report: Check,
): Promise<void> {
  const check: Check = (name, ok, detail) => report(`${store.kind} operator: ${name}`, ok, detail)
  const other = (s: Side): Side => (s === "python" ? "typescript" : "python")
  const cases: [Side, "completed" | "not_executed"][] = [
    ["python", "completed"],
    ["python", "not_executed"],
    ["typescript", "completed"],
    ["typescript", "not_executed"],
  ]
  // Every worker is killed first, so one lease lapse serves all four.
  const ids = cases.map(([worker, verdict], i) => ({
    worker,
    verdict,
    callId: `op-${worker}-${verdict}`,
    amount: 11 + i,
  }))
  for (const c of ids) call(c.worker, "non_idempotent_mutate", c.callId, c.amount, true)
  await sleep(1_500)
  for (const { worker, verdict, callId, amount } of ids) {
    const operator = other(worker)
    const label = `${worker} worker killed mid-effect, ${operator} operator releases ${verdict}`
    const blocked = call(worker, "non_idempotent_mutate", callId, amount)
    const id = await requestIdOf(store.spec, callId)
    if (blocked?.error !== "LedgerHardBlockError" || !id) {
      check(`${label}: the redispatch hard-blocks first`, false, { blocked, id })
      continue
    }
    const verdictResult = { paid: amount, by: "operator" }
    const released =
      operator === "typescript"
        ? tsRelease(store.spec, id, verdict, verdictResult)
        : pyRelease(src, store.spec, id, verdict, verdictResult)
    check(`${label}: the release is accepted`, released.ok, released.out)
    const again = call(worker, "non_idempotent_mutate", callId, amount)
    const then = call(operator, "non_idempotent_mutate", callId, amount)
    const expected = verdict === "completed" ? verdictResult : { paid: amount, by: worker }
    check(
      `${label}: ${worker} ${verdict === "completed" ? "replays the verdict" : "runs it once more"}, ${operator} replays`,
      again?.executed === (verdict === "completed" ? 0 : 1) &&
        again?.error === null &&
        same(again.result, expected) &&
        then?.executed === 0 &&
        then.error === null &&
        same(then.result, expected),
      { again, then },
    )
    // One-shot: a second release of the settled row is refused by either side.
    const twice =
      worker === "typescript"
        ? tsRelease(store.spec, id, verdict, verdictResult)
        : pyRelease(src, store.spec, id, verdict, verdictResult)
    check(`${label}: a second release (by ${worker}'s operator) is refused`, !twice.ok, twice.out)
  }
}
