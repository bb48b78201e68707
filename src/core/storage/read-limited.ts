// A request or response body read under a byte limit: the declared Content-Length is checked first, then the stream
// is counted as it arrives, so a hostile peer's endless body is cut off at the limit instead of filling memory.

/** The largest answer the clients (RemoteLedger, HttpLedgerStorage) read unless told otherwise: 64 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024

/** What a Request and a Response both have. */
export interface BodySource {
  readonly headers: Headers
  readonly body: ReadableStream<Uint8Array> | null
}

/** The body's bytes, or null when it declares or streams more than `max` bytes (the stream is then cancelled). */
export async function readLimited(message: BodySource, max: number): Promise<Uint8Array | null> {
  const declared = message.headers.get("content-length")
  if (declared !== null && (!/^\d{1,16}$/.test(declared) || Number(declared) > max)) {
    await message.body?.cancel().catch(() => undefined)
    return null
  }
  if (!message.body) return new Uint8Array(0)
  const reader = message.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => undefined)
      return null
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array
  const all = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    all.set(c, at)
    at += c.byteLength
  }
  return all
}
