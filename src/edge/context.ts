// What every route group shares: the tenant's stores, scope checks, and validated input.
import type { Context, Hono } from "hono"
import type * as z from "zod/mini"
import type { ActionLedger, LedgerStorage } from "../core/ledger/index.ts"
import type { ReceiptEmitter } from "../core/receipts/emitter.ts"
import type { ReceiptKeys } from "../core/receipts/verify.ts"
import type { LedgerScope, Principal } from "./auth.ts"
import type { BodyLimits, ExactMember } from "./body.ts"

export type AppEnv = { Variables: { principal: Principal } }
export type Api = Hono<AppEnv>
export type Ctx = Context<AppEnv>

export interface Tenant {
  readonly storage: LedgerStorage
  /** For fenced operations and operators; begin-a-call builds its own ledger per claim (its owner is the lease). */
  readonly ledger: ActionLedger
  /** The tenant's audit receipts, when the app keeps them (docs/receipts.md). */
  readonly receipts: TenantReceipts | null
}

/** A tenant's receipt emitter (its ledgers sign outcomes and releases with it) and the keys that verify them. */
export interface TenantReceipts {
  readonly emitter: ReceiptEmitter
  readonly keys: ReceiptKeys
}

export interface RouteContext {
  readonly limits: BodyLimits
  readonly defaultLeaseTtl: number
  readonly maxLeaseTtl: number
  readonly pollInterval: number
  readonly defaultPageSize: number
  readonly maxPageSize: number
  readonly maxVerifyReceipts: number
  readonly maxVerifyBytes: number
  readonly maxReceiptPageBytes: number
  /** Most characters of rows (their JSON text) a `GET /v1/rows` or `GET /v1/transitions` page holds. */
  readonly maxRowPageBytes: number
  /** A list route's `limit` query value: the default when absent, 400 `invalid_query` outside 1..maxPageSize. */
  pageLimit(raw: string | undefined): number
  now(): number
  /** The caller's tenant, once its token is checked for `scope`. */
  need(c: Ctx, scope: LedgerScope): Tenant
  /** A per-claim ledger over the tenant's store, with `owner` and `leaseTtl` set. */
  claimLedger(tenant: Tenant, owner: string, leaseTtl: number): ActionLedger
  /** The JSON body, validated; `exact`: that member read exactly (integers beyond 2^53 as bigint). */
  body<T extends z.ZodMiniType>(c: Ctx, schema: T, exact?: ExactMember): Promise<z.infer<T>>
  query<T extends z.ZodMiniType>(c: Ctx, schema: T): z.infer<T>
  /** The `:id` path parameter, checked. */
  id(c: Ctx): string
}
