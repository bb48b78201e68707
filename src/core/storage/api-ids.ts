// The ledger API's id limit, in one place for the server (src/edge/body.ts) and its clients (HttpLedgerStorage),
// without a client importing the server's body reader.

/** Longest id the routes that name a call accept (`/v1/calls/{id}/…`, `/v1/transitions/{id}`). */
export const MAX_ID = 512
