// Side-effect entry for runtimes with Node's built-ins (Node, Deno, Bun, Workers with nodejs_compat): native
// SHA-256 for transition keys and AsyncLocalStorage for implicit sessions. The core works without it.
import * as crypto from "node:crypto"
import "./async-context.ts"
import { configureSha256 } from "./core/ledger/model/sha256.ts"

// crypto.hash (Node 20.12+, Deno, Bun) skips the Hash object; createHash is the fallback.
const oneShot = (
  crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: "hex") => string }
).hash
configureSha256(
  typeof oneShot === "function"
    ? (input) => oneShot("sha256", input, "hex")
    : (input) => crypto.createHash("sha256").update(input).digest("hex"),
)

export { configureSha256 } from "./core/ledger/model/sha256.ts"
