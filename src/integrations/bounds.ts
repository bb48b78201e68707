// `bounded()` split around the ledger: arguments are checked before the claim (a refused call writes nothing
// and the hashed arguments are the validated, normalized ones), the result inside the body (an invalid result
// is recorded as a failure, never as COMPLETED).
import { type BoundarySchema, type BoundedOptions, bounded, ToolBoundaryError } from "../core/tools/index.ts"

/** `bounded()` options for a guarded tool; `schema` defaults to the framework tool's own input schema. */
export type GuardBoundsOptions = Omit<BoundedOptions, "name">

export interface Bounds {
  input(args: Record<string, unknown>): Promise<Record<string, unknown>>
  output<R>(result: R): Promise<R>
}

const same = <T>(value: T): T => value

export function compileBounds(
  name: string,
  frameworkSchema: BoundarySchema | undefined,
  options: GuardBoundsOptions | false | undefined,
): Bounds {
  if (options === false) return { input: async (a) => a, output: async (r) => r }
  const { outputSchema, ...inputOptions } = options ?? {}
  const scoped = bounded(same<Record<string, unknown>>, { ...inputOptions, name })
  // The framework has already parsed the arguments with its own schema: running it again is a check only. Its
  // output would apply a transform twice (dollars to cents, then cents to "cents" again: a 100x charge), so the
  // tool gets, and the ledger hashes, the framework's value. A schema given in `bounds` is the caller's own
  // normalization and is applied.
  const check =
    frameworkSchema && !inputOptions.schema
      ? bounded(same<Record<string, unknown>>, { schema: frameworkSchema, name })
      : undefined
  const checked = check
    ? async (args: Record<string, unknown>) => {
        await check(args)
        // Awaited, not returned: a scope refusal is a promise already rejected, which workerd reports as uncaught
        // when an async function hands it back.
        return await scoped(args)
      }
    : scoped
  // The frameworks show the model a thrown error's `message`, which for a boundary error is a code for logs ("pay:
  // scope_entity_pattern on to"); its `llmMessage` says what was expected, quoting only the model's own arguments.
  // (Not for the result: an output error's `llmMessage` quotes the result, which the model must not read.)
  const input = (args: Record<string, unknown>) =>
    checked(args).catch((e: unknown) => {
      throw e instanceof ToolBoundaryError ? new ToolBoundaryError(e.llmMessage, e) : e
    })
  // bounded() checks an arguments object; the result is boxed so any value (a string, a list) can be checked.
  const output = outputSchema
    ? bounded((box: { value: unknown }) => box.value, { name, outputSchema })
    : undefined
  return {
    input,
    output: async <R>(result: R) => (output ? ((await output({ value: result })) as R) : result),
  }
}
