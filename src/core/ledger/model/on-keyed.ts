/**
 * Not public: a function under this key in a call's meta is told the call's request id once the row stored there
 * proved to be this call's (same tool, scope and arguments). The integrations' retry memory needs it for a call
 * whose body never ran here (it waited on the same call running elsewhere, or found it ambiguous): the model is
 * told that call failed, and its retry must be held by that row. A row of another call (a drift refusal) is not.
 * A module of its own: the integrations import it without the ledger engine's module-level state.
 */
export const onKeyed: unique symbol = Symbol()

export type KeyedMeta = { [onKeyed]?: (requestId: string) => void }
