// setTimeout caps its delay at 2^31 - 1 ms (about 24.8 days) and fires at once beyond that; a week-long deadline
// must not end a run immediately, so long delays are chained.
const MAX_DELAY = 2_147_483_647

export interface Timer {
  clear(): void
}

export function startTimer(ms: number, fn: () => void): Timer {
  let handle: ReturnType<typeof setTimeout>
  const arm = (left: number) => {
    handle = setTimeout(
      () => (left > MAX_DELAY ? arm(left - MAX_DELAY) : fn()),
      Math.min(Math.max(left, 0), MAX_DELAY),
    )
  }
  arm(ms)
  return { clear: () => clearTimeout(handle) }
}
