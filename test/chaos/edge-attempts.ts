// The attempts log of the edge chaos test: who may hold a call's lease. Over the API a row's owner is the hash of a
// secret lease, which says nothing about which process holds it, so every agent writes here (synchronously, so a
// SIGKILL keeps what was written) when a call begins, when the server hands it the lease (before any effect) and
// when the call is over. The operator reads it to know whose death it may assert for a row.
import { appendFileSync, existsSync, readFileSync } from "node:fs"

/** `begin <attempt> <id>`, `claim <attempt> <id> <fence>`, `end <attempt> <id>`; an attempt is `<worker>.<n>`. */
export class AttemptLog {
  #seq = 0
  constructor(
    readonly file: string,
    readonly worker: string,
  ) {}

  /** Runs `call` as one attempt on `id`; `call` gets the function its tool body calls once it holds the lease. */
  async attempt<T>(id: string, call: (claimed: (fence: number) => void) => Promise<T>): Promise<T> {
    const attempt = `${this.worker}.${++this.#seq}`
    appendFileSync(this.file, `begin ${attempt} ${id}\n`)
    try {
      return await call((fence) => appendFileSync(this.file, `claim ${attempt} ${id} ${fence}\n`))
    } finally {
      // The call has settled: its body (and any effect in it) is done, and nothing holds its lease any more.
      appendFileSync(this.file, `end ${attempt} ${id}\n`)
    }
  }
}

export interface Attempts {
  /** `<id> <fence>` → the attempt the server gave that claim to. */
  readonly claims: Map<string, string>
  /** id → every attempt begun on it. */
  readonly begun: Map<string, string[]>
  readonly ended: Set<string>
}

export function readAttempts(file: string): Attempts {
  const out: Attempts = { claims: new Map(), begun: new Map(), ended: new Set() }
  if (!existsSync(file)) return out
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [kind, attempt, id, fence] = line.split(" ")
    if (!attempt || !id) continue // the last line, cut by a SIGKILL mid-write
    if (kind === "begin") out.begun.set(id, [...(out.begun.get(id) ?? []), attempt])
    else if (kind === "claim" && fence) out.claims.set(`${id} ${fence}`, attempt)
    else if (kind === "end") out.ended.add(attempt)
  }
  return out
}

const workerOf = (attempt: string) => attempt.slice(0, attempt.lastIndexOf("."))

/**
 * Whether nobody can act on the lease of row `id` at `fence` any more. Read with rows listed before the log: then an
 * attempt that could hold that lease has begun in this log. Its holder is the attempt the claim names; with no claim
 * logged (the answer was lost: the agent or the server died, or not logged yet), any attempt begun on the id may
 * hold it unlogged, so every one of them must be over (ended, or its worker SIGKILLed).
 */
export function holderGone(a: Attempts, killed: ReadonlySet<string>, id: string, fence: number): boolean {
  const over = (attempt: string) => a.ended.has(attempt) || killed.has(workerOf(attempt))
  const holder = a.claims.get(`${id} ${fence}`)
  if (holder) return over(holder)
  return (a.begun.get(id) ?? []).every(over)
}

/** Workers holding a call right now, as far as the log shows: one claimed and not over. */
export function holders(a: Attempts): Set<string> {
  const out = new Set<string>()
  for (const attempt of a.claims.values()) if (!a.ended.has(attempt)) out.add(workerOf(attempt))
  return out
}
