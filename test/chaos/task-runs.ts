// The task chaos's evidence read back: the runs the bodies logged (chaos-task.ts), joined with what the parent
// knows of each owner (when it was SIGKILLed, when SIGSTOPped), into the overlaps and reclaims the test checks.
import { lines } from "./chaos-kit.ts"

/** One body run: a claim's fence, from its `start` line to its `done` or `abort` line, or to its owner's death. */
export interface Run {
  readonly id: string
  readonly owner: string
  readonly fence: number
  readonly start: number
  end: number
  ended: "done" | "abort" | "killed" | "open"
  /** Its ctx.signal aborted (before or after its body returned). */
  signalled: boolean
}

export interface Fate {
  killedAt?: number
  /** SIGSTOP to SIGCONT (Infinity: killed while stopped). */
  readonly stalls: { from: number; to: number }[]
}

export interface RunLog {
  /** By id, in fence order. */
  readonly runs: Map<string, Run[]>
  /** Bodies handed a lease that had lapsed already (they did not begin). */
  readonly late: number
  /** `done`, `abort` or `signal` lines with no `start` (never expected). */
  readonly orphans: string[]
}

export function readRuns(file: string, fates: ReadonlyMap<string, Fate>): RunLog {
  const byKey = new Map<string, Run>()
  const orphans: string[] = []
  let late = 0
  for (const l of lines(file)) {
    const [t, what, id, owner, fence] = l.split(" ") as [string, string, string, string, string]
    const key = `${id}@${fence}`
    if (what === "late") late++
    else if (what === "start")
      byKey.set(key, {
        id,
        owner,
        fence: Number(fence),
        start: Number(t),
        end: Infinity,
        ended: "open",
        signalled: false,
      })
    else {
      const run = byKey.get(key)
      if (!run || run.owner !== owner) orphans.push(l)
      else if (what === "signal") run.signalled = true
      else {
        run.end = Number(t)
        run.ended = what as "done" | "abort"
      }
    }
  }
  const runs = new Map<string, Run[]>()
  for (const run of byKey.values()) {
    const killedAt = fates.get(run.owner)?.killedAt
    if (run.ended === "open" && killedAt !== undefined) {
      run.end = killedAt
      run.ended = "killed"
    }
    runs.set(run.id, [...(runs.get(run.id) ?? []), run])
  }
  for (const r of runs.values()) r.sort((a, b) => a.fence - b.fence)
  return { runs, late, orphans }
}

/** A later claim's body starting while an earlier one still ran. */
export interface Overlap {
  readonly earlier: Run
  readonly later: Run
  /** The earlier owner was SIGSTOPped after its run began and before the later one did: its lease could lapse. */
  readonly excused: boolean
}

// The parent notes a SIGSTOP just before sending it, and a SIGCONT just before sending that: a line the owner wrote
// as either landed may be a little later.
const SIGNAL_SLACK_MS = 50

/**
 * `run` logged its start after `later` (a later claim of its id) began, because its owner was SIGSTOPped from before
 * that claim's body began until just before `run`'s start line. The ledger checks the lease last right before it calls
 * the body: a process frozen between that check and the body's first line wakes with a lease already taken over, and
 * no ledger can close that gap. It is microseconds wide; widened to 40 ms in a scratch run, it gave such starts on
 * Redis and on Upstash. Any other start after a later claim's is a body handed a lapsed lease.
 */
export function frozenBeforeStart(run: Run, later: Run, fates: ReadonlyMap<string, Fate>): boolean {
  return (fates.get(run.owner)?.stalls ?? []).some(
    (s) => s.from <= later.start && s.to >= later.start - SIGNAL_SLACK_MS && s.to <= run.start,
  )
}

export function overlaps(log: RunLog, fates: ReadonlyMap<string, Fate>): Overlap[] {
  const out: Overlap[] = []
  for (const runs of log.runs.values())
    for (let i = 0; i < runs.length; i++)
      for (let j = i + 1; j < runs.length; j++) {
        const earlier = runs[i] as Run
        const later = runs[j] as Run
        if (later.start >= earlier.end) continue
        // Stalled while it ran (its lease could lapse), or frozen before its first line (see frozenBeforeStart).
        const excused =
          (fates.get(earlier.owner)?.stalls ?? []).some(
            (s) => s.from >= earlier.start - SIGNAL_SLACK_MS && s.from <= later.start,
          ) || frozenBeforeStart(earlier, later, fates)
        out.push({ earlier, later, excused })
      }
  return out
}

/** Why a claim was taken again: how the body run before it (the same id, the next lower fence logged) ended. */
export function reclaims(log: RunLog, fates: ReadonlyMap<string, Fate>, before: number) {
  const counts = { takeovers: 0, afterCrash: 0, afterLostCompletion: 0, afterAbort: 0, ofStalledHolder: 0 }
  for (const runs of log.runs.values())
    for (let i = 1; i < runs.length; i++) {
      const prev = runs[i - 1] as Run
      const run = runs[i] as Run
      if (run.start >= before) continue
      counts.takeovers++
      const killedAt = fates.get(prev.owner)?.killedAt ?? Infinity
      if (run.start < prev.end) counts.ofStalledHolder++
      else if (prev.ended === "abort") counts.afterAbort++
      else {
        // Done but not recorded: killed before its completion write, or stalled past its lease before it.
        if (prev.ended === "done") counts.afterLostCompletion++
        if (killedAt <= run.start) counts.afterCrash++
      }
    }
  return counts
}
