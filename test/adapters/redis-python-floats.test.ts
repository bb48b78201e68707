// A TypeScript write over a row the Python original wrote to Redis (an operator's release or mark-dead) keeps the
// row's args and kwargs as Python wrote them. The original re-derives a row's args fingerprint from its stored args
// and kwargs, where 100.0 is not 100 (canonical_json keeps floats and ints apart); JSON.stringify wrote 100.0 as 100,
// 1e+16 as an int, an int past 2^53 rounded and NaN as null, so after a release from TypeScript the Python worker's
// retry of the same request was an args drift (always refused for an explicit request_id) instead of a replay.
// @upstash/redis also JSON-parses every reply string by default, which loses the same numbers before the adapter
// sees them: rows come back from the scripts as text, whatever the client's `automaticDeserialization`.
import { Redis } from "@upstash/redis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { RedisLedgerStorage, RespConnection } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { ActionLedger, type LedgerStorage } from "../../src/core/index.ts"
import { argsFingerprint } from "../../src/core/ledger/model/identity.ts"
import { parsePythonJson } from "../../src/core/python-json.ts"
import {
  dropKeys,
  REDIS_URL,
  requireUpstash,
  runTag,
  UPSTASH_TOKEN,
  UPSTASH_URL,
  upstashClient,
} from "./servers/env.ts"

const base = `mycelium-test:${runTag("py-floats")}`
// Raw text, unparsed: a RESP connection of our own.
const raw = new RespConnection(REDIS_URL)
const text = async (key: string) => (await raw.command("GET", key)) as string

// json.dumps of the original's to_dict(): its separators, its key order, Python's number forms. A nested "status"
// key inside kwargs comes before the row's own.
const ARGS = "[2.0, 12345678901234567891]"
const KWARGS =
  '{"amount": 100.0, "fee": 0.5, "big": 1e+16, "ratio": NaN, "order": {"id": 7, "status": "new", "lines": [1.0, -0.0]}, ' +
  '"tool_call_id": "call_ID"}'
const pythonRow = (id: string, outcome: "BLOCKED" | "IN_FLIGHT") =>
  `{"request_id": "${id}", "tool": "send_payment", "args": ${ARGS}, "kwargs": ${KWARGS.replace("ID", id)}, ` +
  `"status": "${outcome === "BLOCKED" ? "failed" : "in-flight"}", "terminal_outcome": "${outcome}", "fence": 2, ` +
  `"result": null, "error": null, "started_at": 1767225600.5, "finished_at": null, "lease_until": 1767225660.5, ` +
  `"owner": "host-a:42", "idempotency_key": "${id}", "side_effect_boundary": "maybe_crossed", ` +
  `"effect_phase": "ATTEMPTING", "effect_protocol_required": false, "effect_id": "${id}", "schema_version": 2}`

/** The args fingerprint the original derives from a stored row (its floats and ints kept apart). */
const pythonFingerprint = (text: string): string => {
  const row = parsePythonJson(text) as { args: unknown[]; kwargs: Record<string, unknown> }
  return argsFingerprint(row.kwargs, row.args)
}

beforeAll(requireUpstash)
afterAll(async () => {
  raw.close()
  await dropKeys(`${base}:*`)
})

const stores: Array<[string, (prefix: string) => LedgerStorage]> = [
  ["upstash", (prefix) => new UpstashLedgerStorage({ redis: upstashClient(), prefix })],
  [
    "upstash, automaticDeserialization false",
    (prefix) =>
      new UpstashLedgerStorage({
        redis: new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN, automaticDeserialization: false }),
        prefix,
      }),
  ],
  ["redis (TCP)", (prefix) => new RedisLedgerStorage({ url: REDIS_URL, prefix })],
]

describe.each(stores)("%s: a TypeScript write over a Python row", (name, open) => {
  const prefix = `${base}:${name.replace(/\W+/g, "-")}:action:`
  const read = (id: string) => text(prefix + id)
  let storage: LedgerStorage
  let ledger: ActionLedger
  beforeAll(() => {
    storage = open(prefix)
    ledger = new ActionLedger({ storage, onWarning: () => {} })
  })
  afterAll(() => storage.close?.())

  it("release() keeps the stored args and kwargs text, so the original's fingerprint is unchanged", async () => {
    const id = "py-release"
    const before = pythonRow(id, "BLOCKED")
    await raw.command("SET", prefix + id, before)
    await ledger.release(id, {
      verified: "completed",
      result: "pi_1",
      by: "ops@example",
      reason: "seen at provider",
    })
    const after = await read(id)
    expect(JSON.parse(after.replace("NaN", "null")).terminal_outcome).toBe("COMPLETED")
    expect(after).toContain(`"args": ${ARGS}, "kwargs": ${KWARGS.replace("ID", id)}`)
    expect(pythonFingerprint(after)).toBe(pythonFingerprint(before))
    // The tombstone the original reads once the key expired holds the same.
    const tomb = await text(`${prefix.slice(0, -1)}-tomb:${id}`)
    expect(pythonFingerprint(tomb)).toBe(pythonFingerprint(before))
  })

  it("markWorkerDeadFor() keeps it too", async () => {
    const id = "py-dead"
    const before = pythonRow(id, "IN_FLIGHT")
    await raw.command("SET", prefix + id, before)
    await ledger.markWorkerDeadFor(id, { by: "ops@example", reason: "host gone" })
    const marked = await read(id)
    expect(JSON.parse(marked.replace("NaN", "null")).worker_dead_asserted_by).toBe("ops@example")
    expect(pythonFingerprint(marked)).toBe(pythonFingerprint(before))
  })

  it("a write with other arguments writes those, and a row TypeScript claimed is written as before", async () => {
    const id = "py-replaced"
    await raw.command("SET", prefix + id, pythonRow(id, "BLOCKED"))
    const stored = (await storage.get(id)) as NonNullable<Awaited<ReturnType<LedgerStorage["get"]>>>
    await storage.set({ ...stored, kwargs: { ...stored.kwargs, amount: 101 }, fence: 3 })
    expect(await read(id)).toContain(`"kwargs":{"amount":101,"fee":0.5,`)
    const own = "ts-row"
    const claim = await storage.tryClaimInflight(
      newEntry({ requestId: own, tool: "t", kwargs: { amount: 100 } }, 1),
      60,
      1,
    )
    expect(claim.outcome).toBe("claimed")
    expect(await read(own)).toContain('"args":[],"kwargs":{"amount":100}')
  })
})
