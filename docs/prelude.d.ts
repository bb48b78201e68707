// Placeholders the code blocks in README.md and docs/ may use without declaring them: the reader's own
// services and bindings. Anything from this package or a real library must be imported in the block itself.
import type { LedgerStorage } from "../src/core/ledger/index.ts"
import type { ReceiptStore } from "../src/receipts.ts"
import type { StateFlushStore } from "../src/state.ts"
import type { TaskStore } from "../src/tasks.ts"

declare global {
  /** A payment provider's client. */
  const gateway: {
    charge(
      amount: number,
      recipient: string,
      options?: { idempotencyKey?: string },
    ): Promise<{ id: string; amount: number; recipient: string }>
  }
  /** The same, as a function. */
  function charge(amount: number, recipient: string): Promise<{ id: string }>
  /** A framework's tool call. */
  const call: { id: string; name: string; args: Record<string, unknown> }
  /** Stripe's client, the part the reconciler example reads. */
  const stripe: { paymentIntents: { retrieve(id: string): Promise<{ id: string; status: string }> } }
  /** Some ledger store the example does not care about. */
  const storage: LedgerStorage
  /** Picks a tenant's store. */
  function storageFor(tenant: string): LedgerStorage
  /** A transition's request id. */
  const id: string
  /** A bearer token for the edge API. */
  const token: string
  /** An adapter author's own store over some database client (docs/adapter-kit.md's conformance run). */
  const MyStorage: new (
    url: string,
  ) => LedgerStorage & { close(): Promise<void>; putRaw(key: string, json: string): Promise<void> }
  /** The same author's task, receipt and state stores (docs/adapter-kit.md's other suites). */
  const MyTaskStore: new (url: string) => TaskStore
  const MyReceiptStore: new (table: string) => ReceiptStore
  const MyStateStore: new (path: string) => StateFlushStore
  /** A Worker's environment. */
  const env: { LEDGER_JWT_SECRET: string; LEDGER: DurableObjectNamespace }
  /** A Durable Object namespace binding (`@cloudflare/workers-types` in a real Worker). */
  interface DurableObjectNamespace {
    idFromName(name: string): unknown
    get(id: unknown): unknown
  }
}
