export * from "./enums.ts"
