import { unboxNumber } from "../boxed-number.ts"
import { boundaryError, SchemaBuildError, type ToolBoundaryError } from "./errors.ts"
import { compileFieldSpec, type FieldSpecSchema, jsPattern } from "./field-spec.ts"
import { inputHint, inputViolation, outputHint } from "./hints.ts"
import { isPathUnder, normalizePath, resolvePath } from "./paths.ts"
import { validateSchema } from "./schema-check.ts"
import { isStandardSchema, type StandardSchemaV1 } from "./standard-schema.ts"

/** A schema `bounded()` accepts: the YAML field spec, or any Standard Schema (zod 4, valibot, arktype...). */
export type BoundarySchema = FieldSpecSchema | StandardSchemaV1

/** Maps a path to the real path it designates; used for symlink-aware checks (see `mycelium-runtime/node`). */
export type PathResolver = (absolutePath: string) => Promise<string>

/** Options for {@link bounded}. */
export interface BoundedOptions {
  /** Tool name used in errors and the allowlist; defaults to `fn.name`. */
  name?: string
  /** Validates the arguments object before the tool runs. */
  schema?: BoundarySchema
  /** Validates the result after the tool runs; an invalid result is never returned. */
  outputSchema?: BoundarySchema
  /** Argument holding an entity id that must fully match `entityPattern`. */
  entityParam?: string
  entityPattern?: string
  /** Roots a path argument must stay under (after normalization). */
  allowedPaths?: readonly string[]
  /** Argument holding the path. Default `"path"`. */
  pathParam?: string
  /** Directory relative paths resolve against; without it relative paths are refused. */
  baseDir?: string
  /** Resolves symlinks for the candidate and the roots; any failure blocks the call. */
  pathResolver?: PathResolver
}

/** A function wrapped by {@link bounded}. */
export interface BoundedTool<A, R> {
  (args: A): Promise<R>
  readonly toolName: string
  readonly boundedOptions: Readonly<BoundedOptions>
}

type Validator = (value: unknown, stage: "input" | "output", tool: string) => Promise<unknown>

/**
 * Guards a tool's boundary: arguments are validated (and coerced) before it runs, scope checks block
 * out-of-range entities and paths, and the output is validated before it is returned. Every failure is a
 * ToolBoundaryError carrying an `llmMessage` for the model. It never retries; see ToolRunner.
 */
export function bounded<A extends object, R>(
  fn: (args: A) => R | Promise<R>,
  options: BoundedOptions,
): BoundedTool<A, R> {
  const toolName = options.name ?? fn.name
  if (!toolName) throw new SchemaBuildError("bounded() needs a tool name: pass a named function or { name }.")
  const input = options.schema ? buildValidator(options.schema, true) : undefined
  const output = options.outputSchema ? buildValidator(options.outputSchema, false) : undefined
  const entity = compileEntity(options)
  const paths = compilePaths(options)
  checkScopeParams(options)
  // Extra arguments (a ledger's TransitionContext, when mycelium.yaml stacks guards) pass through untouched.
  const inner = fn as (args: A, ...rest: unknown[]) => R | Promise<R>
  const wrapped = (async (args: A, ...rest: unknown[]) => {
    const checked = (input ? await input(args, "input", toolName) : args) as Record<string, unknown>
    // Scope checks read one argument: null arguments threw a TypeError, and "str" or ["/etc/passwd"] had no
    // argument to check and reached the tool unchecked.
    if (entity || paths) {
      if (typeof checked !== "object" || checked === null || Array.isArray(checked))
        throw notAnObject(checked, toolName)
      // JSON.parse makes "__proto__" an own key; a tool that copies its arguments with Object.assign or `o[k] = v`
      // turns it into the prototype, and reads the checked argument, left out, through it unchecked.
      if (Object.hasOwn(checked, "__proto__"))
        throw boundaryError({
          violation: "scope_proto_key",
          toolName,
          stage: "scope",
          field: "__proto__",
          recoveryHint: "Remove __proto__.",
        })
    }
    const pinned = entity ? entity(checked, toolName) : checked
    const scoped = paths ? await paths(pinned, toolName) : pinned
    const result = await inner(scoped as A, ...rest)
    return (output ? await output(result, "output", toolName) : result) as R
  }) as BoundedTool<A, R>
  Object.defineProperties(wrapped, {
    toolName: { value: toolName },
    boundedOptions: { value: Object.freeze({ ...options }) },
  })
  return wrapped
}

function notAnObject(value: unknown, tool: string): ToolBoundaryError {
  return boundaryError({
    violation: "bind_failed",
    toolName: tool,
    stage: "input",
    expected: "an object of named fields",
    actual: value,
    recoveryHint: `Pass the arguments of ${tool} as an object.`,
  })
}

function buildValidator(schema: BoundarySchema, isInput: boolean): Validator {
  if (isStandardSchema(schema)) return (value, stage, tool) => validateSchema(schema, value, stage, tool)
  const { fields, check } = compileFieldSpec(schema)
  return async (value, stage, tool) => {
    // A typed array is no object of named fields either, and copying its every byte as a key took a minute.
    if (typeof value !== "object" || value === null || Array.isArray(value) || ArrayBuffer.isView(value)) {
      if (isInput) throw notAnObject(value, tool)
      throw boundaryError({
        violation: "output_validation_failed",
        toolName: tool,
        stage,
        expected: "an object of named fields",
        actual: value,
        recoveryHint: outputHint(tool),
      })
    }
    // One enumeration, checked and validated: a Proxy could list other keys to a second one.
    const args: Record<string, unknown> = { ...value }
    if (isInput) {
      const extra = Object.keys(args).find((k) => !fields.includes(k))
      if (extra !== undefined) {
        throw boundaryError({
          violation: "unexpected_kwarg",
          toolName: tool,
          stage,
          field: extra,
          expected: `one of [${fields.join(", ")}]`,
          actual: args[extra],
          recoveryHint: `Remove ${extra}; ${tool} accepts only: ${fields.join(", ")}.`,
        })
      }
    }
    const r = check(args)
    if (r.ok) return r.value
    const field = r.issue.path.join(".")
    throw boundaryError({
      violation: isInput ? inputViolation(r.issue.type) : "output_validation_failed",
      toolName: tool,
      stage,
      field,
      expected: r.issue.expected,
      actual: r.issue.input,
      recoveryHint: isInput ? inputHint(r.issue.type, field, tool) : outputHint(tool),
    })
  }
}

// Half of a pair, or an argument the schema does not have (a typo), turned the check off without a word: every
// call went unchecked. Only a field spec lists its arguments here; a Standard Schema's are not known.
function checkScopeParams(options: BoundedOptions): void {
  const { schema, entityParam, entityPattern, allowedPaths, pathParam } = options
  const fields = schema && !isStandardSchema(schema) ? Object.keys(schema) : undefined
  for (const [param, partner, key, other] of [
    [entityParam, entityPattern, "entity_param", "entity_pattern"],
    [pathParam ?? (allowedPaths && "path"), allowedPaths, "path_param", "allowed_paths"],
  ] as const) {
    if ((param === undefined) !== (partner === undefined))
      throw new SchemaBuildError(`${key} and ${other} go together: pass both.`)
    if (param !== undefined && fields && !fields.includes(param))
      throw new SchemaBuildError(`${key} '${param}' is not in the schema: pass one of ${fields.join(", ")}.`)
  }
}

function compileEntity(
  options: BoundedOptions,
): ((args: Record<string, unknown>, tool: string) => Record<string, unknown>) | undefined {
  const { entityParam, entityPattern } = options
  if (entityParam === undefined || entityPattern === undefined) return undefined
  let re: RegExp
  try {
    // Alone first: "a)|(b" compiles once wrapped, as ^(?:a)|(b)$, which takes any id that starts with "a".
    const p = jsPattern(entityPattern)
    new RegExp(p)
    re = new RegExp(`^(?:${p})$`)
  } catch (e) {
    throw new SchemaBuildError(`entity_pattern '${entityPattern}' is invalid: ${(e as Error).message}`)
  }
  return (args, tool) => {
    // Read once: a getter or proxy must not show the check one id and the tool another. A boxed Number or a bigint
    // (parseToolArguments' `1e16` and 9007199254740993) is a number: the tool gets the primitive that was checked.
    const value = unboxNumber(args[entityParam])
    if (value === undefined || value === null) return args
    // Only a string or a number is an id. String() would let ["acct_1"] or {"$ne": null} ("[object Object]")
    // through a pattern, and the tool would receive an array or a query operator instead of one entity.
    const id =
      typeof value === "string"
        ? value
        : typeof value === "bigint" || Number.isFinite(value)
          ? String(value)
          : undefined
    if (id !== undefined && re.test(id)) return { ...args, [entityParam]: value }
    throw boundaryError({
      violation: "scope_entity_pattern",
      toolName: tool,
      stage: "scope",
      field: entityParam,
      expected: `pattern '${entityPattern}'`,
      actual: value,
      recoveryHint: `Provide ${entityParam} in the required format.`,
    })
  }
}

function compilePaths(
  options: BoundedOptions,
): ((args: Record<string, unknown>, tool: string) => Promise<Record<string, unknown>>) | undefined {
  const { allowedPaths, baseDir, pathResolver } = options
  // Not `!allowedPaths`: "" skipped the check below and built a tool with no path check.
  if (allowedPaths === undefined) return undefined
  const param = options.pathParam ?? "path"
  if (!Array.isArray(allowedPaths)) {
    throw new SchemaBuildError("allowed_paths must be a list.")
  }
  const roots = allowedPaths.map((root) => {
    const r = resolvePath(root, baseDir)
    if (r === undefined) {
      throw new SchemaBuildError(
        typeof root === "string"
          ? `allowed_paths entry '${root}' must be absolute (or set baseDir), without a '..' segment, a device name or a share.`
          : "allowed_paths entries must be strings.",
      )
    }
    return r
  })
  const shown = allowedPaths.join(", ")
  return async (args, tool) => {
    const value = args[param]
    if (value === undefined || value === null) return args
    const deny = (): ToolBoundaryError =>
      boundaryError({
        violation: "scope_path",
        toolName: tool,
        stage: "scope",
        field: param,
        expected: `path under ${shown}`,
        actual: value,
        recoveryHint: `Retry with a path under one of: ${shown}.`,
      })
    // resolvePath refuses a value that is not a string.
    const lexical = resolvePath(value as string, baseDir)
    if (lexical === undefined) throw deny()
    let candidate = lexical
    let realRoots = roots
    if (pathResolver) {
      try {
        candidate = normalizePath(await pathResolver(lexical))
        realRoots = await Promise.all(roots.map(async (r) => normalizePath(await pathResolver(r))))
      } catch {
        throw deny()
      }
    }
    if (!realRoots.some((root) => isPathUnder(candidate, root))) throw deny()
    return { ...args, [param]: candidate }
  }
}
