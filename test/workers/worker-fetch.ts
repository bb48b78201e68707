// What every workerd test of the worker entry does: sign an HS256 token and send one JSON request to the worker
// with its bindings, reading back the status and the JSON body.
import { SignJWT } from "jose"
import worker from "../../src/edge/worker.ts"

export interface TokenOptions {
  /** `exp`: a duration such as "5m" or seconds since the epoch; default "5m". */
  exp?: string | number
  /** `iat`: seconds before now; default none. */
  issuedSecondsAgo?: number
  sub?: string
}

export function signToken(secret: string, claims: Record<string, unknown>, o: TokenOptions = {}) {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setExpirationTime(o.exp ?? "5m")
  if (o.issuedSecondsAgo !== undefined) jwt.setIssuedAt(Math.floor(Date.now() / 1000) - o.issuedSecondsAgo)
  if (o.sub !== undefined) jwt.setSubject(o.sub)
  return jwt.sign(new TextEncoder().encode(secret))
}

export interface WorkerAnswer {
  status?: string
  fence?: number
  lease?: string
  request_id?: string
  error?: { code: string; message: string }
  [key: string]: unknown
}

/** One request to the worker; a string body is sent as is (malformed JSON tests), anything else as JSON. */
export async function callWorker(
  bindings: object,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: WorkerAnswer }> {
  const r = await worker.fetch(
    new Request(`http://edge.test${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    }),
    bindings as never,
    {},
  )
  return { status: r.status, json: (await r.json()) as WorkerAnswer }
}
