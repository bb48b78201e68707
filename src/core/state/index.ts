export * from "./errors.ts"
export * from "./snapshot.ts"
export * from "./state-flush.ts"
