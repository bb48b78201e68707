// Types for scripts/runtime-suites.mjs (plain JS so scripts/test.mjs runs it without a loader).
export interface RuntimeResult {
  runtime: string
  passed: number
  failed: number
  skipped: number
  modules: number
  /** Deno and Bun: the failed tests' names (and modules that did not run), for the end of `npm test`. */
  failures?: string[]
}
export interface VitestProjectReport {
  modules: string[]
  passed: number
  failed: number
  skipped?: number
}
export const MODULES: { shared: string[]; own: Record<string, string[]> }
export const VITEST_RUNTIMES: string[]
export function expectedModules(runtime: string): string[]
export function missingModules(expected: string[], ran: string[]): string[]
export function runDeno(options?: { importMap?: string; files?: string[]; echo?: boolean }): RuntimeResult
export function runBun(): RuntimeResult
export function vitestRuntimes(
  report: Record<string, VitestProjectReport>,
): Array<RuntimeResult & { missing: number }>
