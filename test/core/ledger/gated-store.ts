// A memory store whose chosen calls stop at a gate, for tests that put one writer's step between another's read
// and write. A gated read answers with the row as it was when it arrived; a gated write waits, then writes.
import type { LedgerStorage, MemoryLedgerStorage } from "../../../src/core/index.ts"

export interface GatedStore {
  readonly store: LedgerStorage
  /** Resolves when the first gated call arrives. */
  readonly arrived: Promise<void>
  /** Lets every gated call through, now and later. */
  open(): void
}

export function gatedStore(
  rows: MemoryLedgerStorage,
  gated: (method: string, args: unknown[]) => boolean,
): GatedStore {
  let reached!: () => void
  const arrived = new Promise<void>((r) => {
    reached = r
  })
  let open!: () => void
  const opened = new Promise<void>((r) => {
    open = r
  })
  const store = new Proxy(rows, {
    get(target, key) {
      const member = (target as unknown as Record<string | symbol, unknown>)[key]
      if (typeof member !== "function") return member
      const call = (args: unknown[]) => (member as (...a: unknown[]) => unknown).apply(target, args)
      if (key === "list") return (...args: unknown[]) => call(args)
      return async (...args: unknown[]) => {
        if (!gated(String(key), args)) return call(args)
        reached()
        if (key === "get") {
          const seen = await call(args)
          await opened
          return seen
        }
        await opened
        return call(args)
      }
    },
  }) as LedgerStorage
  return { store, arrived, open }
}

/** A gate for the next `get` only, armed by calling the returned function. */
export function nextRead(): { gated: (method: string) => boolean; arm: () => void } {
  let armed = false
  return {
    gated: (method) => {
      if (method !== "get" || !armed) return false
      armed = false
      return true
    },
    arm: () => {
      armed = true
    },
  }
}
