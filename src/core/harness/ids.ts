// Run and plan ids: `run:<32 lowercase hex>` as in the original's run_identity format.
function hex32(): string {
  return globalThis.crypto.randomUUID().replaceAll("-", "")
}
export function newRunId(): string {
  return `run:${hex32()}`
}
export function newPlanId(): string {
  return `plan:${hex32()}`
}
