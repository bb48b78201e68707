// The runtime-neutral core. Nothing here may import a Node API or a storage client library.
export * from "./context/index.ts"
export * from "./ledger/index.ts"
export * from "./receipts/index.ts"
export * from "./state/index.ts"
export * from "./tasks/index.ts"
export * from "./tools/index.ts"
export * from "./transcript/index.ts"
