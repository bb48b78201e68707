// Receipts with random inputs and outputs, signed by each implementation and verified by the other: the original's
// AuditReceiptEmitter and verify_receipt against this package's ReceiptEmitter and verifyReceipts, on one JSONL
// file each. A receipt one side cannot verify is audit evidence the other side's tools reject. Part of
// `npm run interop:python` (scripts/python-interop.ts); same seed as the key checks (INTEROP_KEY_SEED).
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { FileReceiptStore } from "../src/adapters/file-receipts.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../src/core/receipts/index.ts"
import type { Check } from "./python-interop-config.ts"
import { exactJson, generator, values } from "./python-interop-keys.ts"
import { pythonEnv } from "./python-interop-stores.ts"

const here = dirname(fileURLToPath(import.meta.url))
const KEY = "interop-receipt-key"

interface Draft {
  request_id: string
  kwargs: Record<string, unknown>
  outputs: unknown
  error: string | null
}

function drafts(seed: number, count: number): Draft[] {
  const rand = generator(seed)
  const v = values(rand)
  return Array.from({ length: count }, (_, i) => ({
    request_id: `r${i}-${v.text()}`,
    kwargs: v.object(0),
    outputs: rand() < 0.5 ? v.object(0) : v.scalar(),
    error: rand() < 0.2 ? v.text() : null,
  }))
}

export async function receiptChecks(src: string, dir: string, seed: number, check: Check): Promise<void> {
  const count = Math.min(Number(process.env.INTEROP_KEY_CASES ?? 3000), 1000)
  const pyFile = join(dir, "fuzz-py-receipts.jsonl")
  const tsFile = join(dir, "fuzz-ts-receipts.jsonl")
  const py = (file: string, mode: "emit" | "verify", input?: string) =>
    spawnSync("python3", [join(here, "python", "original-receipts.py"), file, KEY, mode], {
      input,
      encoding: "utf8",
      env: pythonEnv(src),
      maxBuffer: 64 * 1024 * 1024,
    })

  // The original signs; this package verifies every line it wrote.
  const emitted = py(pyFile, "emit", drafts(seed, count).map(exactJson).join("\n"))
  const pyLines = emitted.status === 0 ? readFileSync(pyFile, "utf8").trim().split("\n").length : 0
  const theirs = await verifyReceipts(await new FileReceiptStore(pyFile).list(), { hmac: KEY })
  check(
    `receipts: ${count} random receipts the original signed (seed ${seed}) verify here`,
    emitted.status === 0 && pyLines === count && theirs.ok && theirs.valid === count,
    {
      stderr: emitted.stderr.slice(-500),
      lines: pyLines,
      valid: theirs.valid,
      failures: theirs.failures.slice(0, 3),
    },
  )

  // This package signs; the original's verify_receipt checks every one.
  const emitter = new ReceiptEmitter({
    signer: hmacReceiptSigner(KEY),
    store: new FileReceiptStore(tsFile),
    agentId: "interop",
  })
  const signErrors: string[] = []
  for (const d of drafts(seed + 1, count)) {
    try {
      await emitter.emit({
        action: "send_payment",
        actionKind: "tool",
        requestId: d.request_id,
        kwargs: d.kwargs,
        outputs: d.outputs,
        status: d.error === null ? "completed" : "failed",
        error: d.error,
      })
    } catch (e) {
      signErrors.push((e as Error).message)
    }
  }
  const verified = py(tsFile, "verify")
  let verdicts: boolean[] = []
  try {
    verdicts = JSON.parse(verified.stdout) as boolean[]
  } catch {}
  const bad = verdicts.flatMap((ok, i) => (ok ? [] : [i]))
  check(
    `receipts: ${count} random receipts signed here (seed ${seed + 1}) verify in the original`,
    signErrors.length === 0 && verdicts.length === count && bad.length === 0,
    {
      signErrors: signErrors.slice(0, 3),
      stderr: verified.stderr.slice(-500),
      verdicts: verdicts.length,
      bad: bad.slice(0, 5),
    },
  )
}
