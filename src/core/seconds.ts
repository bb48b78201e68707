// Seconds options (leases, polls, waits) as the action ledger and the task ledger check them. NaN, what Number()
// gives for an unset environment variable, compares false with everything: it made unbounded leases, polls that
// never time out and busy polls. Infinity cannot be stored (JSON has no Infinity: a lease would read back
// unbounded), so only waits may be infinite.
import { safeString } from "./repr.ts"

/** Why `value` cannot be the seconds option `name`, or null when it can. */
export function secondsProblem(
  name: string,
  value: unknown,
  min?: number,
  infinite?: boolean,
): string | null {
  return typeof value !== "number" ||
    Number.isNaN(value) ||
    (!infinite && !Number.isFinite(value)) ||
    (min !== undefined && value < min)
    ? `${name} must be a ${infinite ? "" : "finite "}number of seconds${min === undefined ? "" : ` >= ${min}`}, got ${safeString(value)}`
    : null
}
