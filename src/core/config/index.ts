export { type ConfigEnv, expandEnv } from "./env.ts"
export { ConfigClosedError, ConfigError, type ConfigLocation } from "./errors.ts"
export { type LoadConfigOptions, loadConfigFromString } from "./load.ts"
export {
  type ConfigRun,
  type ConfigRunOptions,
  type ConfiguredTask,
  type ConfiguredTaskBody,
  type ConfiguredTool,
  type ConfiguredToolBody,
  MyceliumConfig,
  type MyceliumConfigOptions,
  type ReceiptStoreChoice,
  type ReceiptStoreFactory,
  type StateStoreChoice,
  type StorageFactory,
  type TaskStoreFactory,
} from "./mycelium-config.ts"
export type {
  ResolvedConfig,
  ResolvedLedger,
  ResolvedStorage,
  ResolvedTask,
  ResolvedTool,
  ResolvedTransition,
} from "./normalize.ts"
export { configSchema, type RawConfig, STORAGE_KINDS, type StorageKind } from "./schema.ts"
export type { ConfigSource } from "./source.ts"
