// `mycelium release ...`: kept as a short form of `mycelium transitions release`.
import { release } from "./transitions.ts"

export const HELP =
  "mycelium release ID ... (same as: mycelium transitions release; see mycelium transitions --help)"

export function run(args: string[]): Promise<number> {
  return release(args, "release")
}
