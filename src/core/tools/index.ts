export {
  type BoundarySchema,
  type BoundedOptions,
  type BoundedTool,
  bounded,
  type PathResolver,
} from "./bounded.ts"
export {
  type BoundaryStage,
  SchemaBuildError,
  ToolBoundaryError,
  type ToolBoundaryErrorInit,
  ToolBoundaryExhaustedError,
  type ToolBoundaryExhaustedErrorInit,
  type ToolErrorMessage,
  ToolRunnerConfigError,
  toolErrorMessage,
} from "./errors.ts"
export {
  compileFieldSpec,
  type FieldIssue,
  type FieldResult,
  type FieldSpec,
  type FieldSpecSchema,
} from "./field-spec.ts"
export { isPathUnder, normalizePath, resolvePath } from "./paths.ts"
export { type RegisteredTool, ToolRegistry, type ToolRegistryOptions } from "./registry.ts"
export {
  type LlmRetryRequest,
  type LlmRetryResult,
  type ParsedToolCall,
  ToolRunner,
  type ToolRunnerOptions,
} from "./runner.ts"
export {
  isStandardSchema,
  type StandardSchemaIssue,
  type StandardSchemaResult,
  type StandardSchemaV1,
} from "./standard-schema.ts"
