// Endpoints of the real local services (scripts/services.sh). Tests fail, never skip, when one is missing.
import { Redis } from "@upstash/redis"
import { RespConnection } from "../../../src/adapters/redis.ts"

export const UPSTASH_URL = process.env.UPSTASH_REDIS_REST_URL ?? "http://127.0.0.1:8079"
export const UPSTASH_TOKEN = process.env.UPSTASH_REDIS_REST_TOKEN ?? "local-token"
export const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://app:app@127.0.0.1:5433/app"
export const NEON_WS_PROXY = process.env.NEON_WS_PROXY ?? "127.0.0.1:6543"
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

const HINT = "start the local services with `bash scripts/services.sh start` (see docs/development.md)"

/** A fresh client per call: each one is an independent connection pool / HTTP keep-alive agent. */
export function upstashClient(url = UPSTASH_URL, options: { retry?: false } = {}): Redis {
  return new Redis({ url, token: UPSTASH_TOKEN, ...(options.retry === false ? { retry: false } : {}) })
}

export async function requireUpstash(): Promise<void> {
  try {
    // Not PING: the local server returns status replies unencoded, which the client's base64 mode garbles.
    const n = await upstashClient(UPSTASH_URL, { retry: false }).exists("mycelium-test:health")
    if (typeof n !== "number") throw new Error(`EXISTS answered ${String(n)}`)
  } catch (e) {
    throw new Error(`Upstash REST server at ${UPSTASH_URL} is not answering (${String(e)}); ${HINT}`)
  }
}

export const SERVICES_HINT = HINT

/** Unique per test file and run, so files running in parallel never see each other's rows. */
export function runTag(label: string): string {
  return `${label}-${process.pid}-${Date.now().toString(36)}`
}

/** Drops a Neon ledger table and the claim function its migrate() created (two statements: the HTTP path runs one). */
export async function dropLedgerTable(
  db: { query(text: string): PromiseLike<unknown> },
  table: string,
): Promise<void> {
  await db.query(`DROP TABLE IF EXISTS ${table}`)
  await db.query(`DROP FUNCTION IF EXISTS ${table}_claim`)
}

/** Deletes the Redis keys that match `match` (Upstash's REST server keeps its keys in the same Redis): a soak makes 10^5. */
export async function dropKeys(match: string): Promise<void> {
  const conn = new RespConnection(REDIS_URL)
  try {
    let cursor = "0"
    do {
      const [next, keys] = (await conn.command("SCAN", cursor, "MATCH", match, "COUNT", 1000)) as [
        string,
        string[],
      ]
      if (keys.length) await conn.command("DEL", ...keys)
      cursor = next
    } while (cursor !== "0")
  } finally {
    conn.close()
  }
}
