// The task ledger's view of its store: fail-closed with one typed error, as the action ledger's SafeStorage is.
import { guardStoreCall, storeFailure } from "../storage/store-failure.ts"
import { TaskStoreUnavailableError } from "./errors.ts"
import type { TaskStore } from "./store.ts"

/** `store` with every failure that is not a ledger decision reported as `TaskStoreUnavailableError`. */
export function guardedTaskStore(store: TaskStore): TaskStore {
  const guard = <T>(op: string, fn: () => Promise<T>) =>
    guardStoreCall("task store", op, fn, TaskStoreUnavailableError)
  return {
    get: (requestId) => guard("get", () => store.get(requestId)),
    swap: (requestId, expected, next) => guard("swap", () => store.swap(requestId, expected, next)),
    async *list() {
      try {
        yield* store.list()
      } catch (e) {
        throw storeFailure("task store", "list", e, TaskStoreUnavailableError)
      }
    },
  }
}
