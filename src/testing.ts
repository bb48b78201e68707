// `mycelium-runtime/testing`. What tests of ledgered code use and production code never does: a clock that moves
// only when told to. Its own entry so the core entry does not carry it.

export { ManualClock } from "./core/ledger/clock.ts"
