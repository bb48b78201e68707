// How a test starts the CLI: node on the bundle test/cli/build-cli.ts made of src/cli/main.ts for this run.
import { inject } from "vitest"

declare module "vitest" {
  export interface ProvidedContext {
    cliMain: string
  }
}

/** The command and leading arguments that run `mycelium`; append the CLI's own arguments. */
export const cliCommand = (): [string, string[]] => [process.execPath, [inject("cliMain")]]
