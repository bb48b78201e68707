export { type ConfigEnv, expandEnv } from "./env.ts"
export { ConfigClosedError, ConfigError, type ConfigLocation } from "./errors.ts"
export { type LoadConfigOptions, loadConfigFromString } from "./load.ts"
export {
  type ConfigPaths,
  type ConfigRun,
  type ConfigRunOptions,
  type ConfiguredTask,
  type ConfiguredTaskBody,
  type ConfiguredTool,
  type ConfiguredToolBody,
  type InstrumentableBodies,
  type Instrumented,
  MyceliumConfig,
  type MyceliumConfigOptions,
  type ReceiptStoreChoice,
  type ReceiptStoreFactory,
  type StateStoreChoice,
  type StateStoreFactory,
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
export { configSchema, type RawConfig, STORAGE_KINDS, type StorageKind, type ToolConfig } from "./schema.ts"
export type { ConfigSource } from "./source.ts"
