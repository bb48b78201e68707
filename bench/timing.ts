// Shared timing for the benches: warm up on distinct inputs, then the mean of one timed loop in µs per call.
export async function microsPerCall(
  n: number,
  fn: (i: number) => Promise<unknown>,
  warm = 2000,
): Promise<number> {
  for (let i = 0; i < Math.min(warm, n); i++) await fn(-i - 1)
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn(i)
  return ((performance.now() - t0) * 1000) / n
}

/** A fixed-width table row: a label and numbers with their unit. */
export function row(label: string, ...cells: string[]): void {
  console.log(`${label.padEnd(58)} ${cells.map((c) => c.padStart(14)).join(" ")}`)
}

export const fmt = (n: number, digits = 2) => n.toFixed(digits)
export const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`
