// The task ledger's view of its store: fail-closed with one typed error, as the action ledger's SafeStorage is.
import { storeFailure } from "../storage/store-failure.ts"
import { TaskStoreUnavailableError } from "./errors.ts"
import type { TaskStore } from "./store.ts"

/** `store` with every failure that is not a ledger decision reported as `TaskStoreUnavailableError`. */
export function guardedTaskStore(store: TaskStore): TaskStore {
  const fail = (op: string) => (e: unknown) => {
    throw storeFailure("task store", op, e, TaskStoreUnavailableError)
  }
  return {
    get: (requestId) =>
      Promise.resolve()
        .then(() => store.get(requestId))
        .catch(fail("get")),
    swap: (requestId, expected, next) =>
      Promise.resolve()
        .then(() => store.swap(requestId, expected, next))
        .catch(fail("swap")),
    async *list() {
      try {
        yield* store.list()
      } catch (e) {
        fail("list")(e)
      }
    },
  }
}
