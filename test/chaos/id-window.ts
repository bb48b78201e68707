// The ids a chaos worker picks from: a window sliding forward on the parent's clock, so fresh ids keep coming (first
// runs to be killed in) while each stays long enough for other workers to meet it, and its lapsed lease. Shared by
// the workers, which pick in it, and their parent, which drains the ids it reached.

export interface IdWindow {
  /** Ids in the window at once. */
  readonly size: number
  /** Ids a second it slides forward. */
  readonly perSecond: number
}

/**
 * The kill chaos's: each id stays ~2 s. Fast enough that a worker mostly holds a claim, so most random kills land
 * inside a call (at 8 ids/s, 3 in 4 kills hit a worker between calls or replaying a stored result).
 */
export const chargeWindow: IdWindow = { size: 48, perSecond: 24 }

/**
 * The task chaos's: each id stays ~4 s, so an id whose holder was killed is still picked once its 1 s lease lapsed.
 * (With 24 ids, 2 s, a loaded machine's slow claims let the window pass such ids by: one run of 27 s took over 3
 * ids, none of them a crashed holder's.)
 */
export const taskWindow: IdWindow = { size: 48, perSecond: 12 }

/** How many ids `w` passes over in `ms`, the first window included. */
export const idsWithin = (w: IdWindow, ms: number): number => w.size + (w.perSecond * ms) / 1000

/** The window's `[lo, hi)` among `total` ids, `elapsedMs` after the parent started. */
export function idRange(w: IdWindow, elapsedMs: number, total: number): { lo: number; hi: number } {
  const hi = Math.min(total, w.size + Math.floor((elapsedMs * w.perSecond) / 1000))
  return { lo: Math.max(0, hi - w.size), hi }
}

/** A random id number in the window. */
export function pickIn(w: IdWindow, elapsedMs: number, total: number): number {
  const { lo, hi } = idRange(w, elapsedMs, total)
  return lo + Math.floor(Math.random() * (hi - lo))
}
