// A chaos worker loops until its parent kills it. When the parent dies first (a vitest worker torn down after a
// timeout, a run stopped by hand), nothing does: three orphaned workers once kept loading the shared Upstash server at
// 85% of a core through a whole later CI run. Each exits once it is orphaned.
export function exitWithParent(): void {
  const parent = process.ppid
  const check = setInterval(() => {
    if (process.ppid !== parent) process.exit(1)
  }, 500)
  check.unref()
}
