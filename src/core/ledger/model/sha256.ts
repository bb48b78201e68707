// A synchronous SHA-256. Every ledgered call hashes twice (args fingerprint, transition key); Web Crypto's
// digest is async and, in Node, hops to a thread pool, which costs more than the hash of a few hundred bytes.
// Tests check it against crypto.subtle.digest.

// Int32Array keeps every value a small integer for V8 (Uint32 values above 2^31 become heap doubles).
// The round constants and initial hash (FIPS 180-4 4.2.2 and 5.3.3: the first 32 bits of the fractional parts of
// the cube roots of the first 64 primes, and of the square roots of the first 8) are computed once at load rather
// than spelled out: the tables were 0.3 KB of a gzipped bundle. Math.sqrt is exact; every cube-root constant is at
// least 0.02 from an integer boundary after scaling, so an engine's cbrt would have to be off by thousands of ulps
// to change one. The tests compare digests with crypto.subtle.digest.
const K = new Int32Array(64)
const IV = new Int32Array(8)
for (let n = 2, i = 0; i < 64; n++) {
  let prime = true
  for (let d = 2; d * d <= n; d++) if (n % d === 0) prime = false
  if (!prime) continue
  if (i < 8) IV[i] = ((Math.sqrt(n) % 1) * 2 ** 32) | 0
  K[i++] = ((Math.cbrt(n) % 1) * 2 ** 32) | 0
}

const W = new Int32Array(64)
const H = new Int32Array(8)
// Message words, reused across calls (the function is synchronous, so nothing else can hold it meanwhile).
let M = new Int32Array(64)
const encoder = /* @__PURE__ */ new TextEncoder()

// Any UTF-16 unit beyond ASCII: such a string is encoded to UTF-8 first.
const NOT_ASCII = /[\u0080-\uffff]/

/** Loads the padded message into M as big-endian words; returns the word count. */
function load(input: string | Uint8Array): number {
  const bytes = typeof input === "string" && NOT_ASCII.test(input) ? encoder.encode(input) : input
  const len = bytes.length
  const words = ((len + 9 + 63) >> 6) << 4
  if (M.length < words) M = new Int32Array(words * 2)
  M.fill(0, 0, words)
  if (typeof bytes === "string") {
    for (let i = 0; i < len; i++)
      M[i >> 2] = (M[i >> 2] as number) | (bytes.charCodeAt(i) << (24 - (i & 3) * 8))
  } else {
    for (let i = 0; i < len; i++)
      M[i >> 2] = (M[i >> 2] as number) | ((bytes[i] as number) << (24 - (i & 3) * 8))
  }
  M[len >> 2] = (M[len >> 2] as number) | (0x80 << (24 - (len & 3) * 8))
  M[words - 2] = Math.floor(len / 0x20000000)
  M[words - 1] = len << 3
  return words
}

function digest(input: string | Uint8Array): void {
  const words = load(input)
  let h0 = IV[0] as number
  let h1 = IV[1] as number
  let h2 = IV[2] as number
  let h3 = IV[3] as number
  let h4 = IV[4] as number
  let h5 = IV[5] as number
  let h6 = IV[6] as number
  let h7 = IV[7] as number
  for (let off = 0; off < words; off += 16) {
    for (let i = 0; i < 16; i++) W[i] = M[off + i] as number
    for (let i = 16; i < 64; i++) {
      const w15 = W[i - 15] as number
      const w2 = W[i - 2] as number
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)
      W[i] = ((W[i - 16] as number) + s0 + (W[i - 7] as number) + s1) | 0
    }
    let a = h0
    let b = h1
    let c = h2
    let d = h3
    let e = h4
    let f = h5
    let g = h6
    let h = h7
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
      const ch = (e & f) ^ (~e & g)
      const t1 = (h + S1 + ch + (K[i] as number) + (W[i] as number)) | 0
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
      const maj = (a & b) ^ (a & c) ^ (b & c)
      const t2 = (S0 + maj) | 0
      h = g
      g = f
      f = e
      e = (d + t1) | 0
      d = c
      c = b
      b = a
      a = (t1 + t2) | 0
    }
    h0 = (h0 + a) | 0
    h1 = (h1 + b) | 0
    h2 = (h2 + c) | 0
    h3 = (h3 + d) | 0
    h4 = (h4 + e) | 0
    h5 = (h5 + f) | 0
    h6 = (h6 + g) | 0
    h7 = (h7 + h) | 0
  }
  H[0] = h0
  H[1] = h1
  H[2] = h2
  H[3] = h3
  H[4] = h4
  H[5] = h5
  H[6] = h6
  H[7] = h7
}

/** SHA-256 digest of a UTF-8 string or bytes: each word big-endian, a byte being the low 8 bits of its shift. */
export function sha256(input: string | Uint8Array): Uint8Array {
  digest(input)
  return Uint8Array.from({ length: 32 }, (_, i) => (H[i >> 2] as number) >>> (24 - (i & 3) * 8))
}

const HEX_TABLE = /* @__PURE__ */ Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

export function toHex(bytes: Uint8Array): string {
  let s = ""
  for (const b of bytes) s += HEX_TABLE[b]
  return s
}

/** A synchronous native SHA-256 (hex), e.g. node:crypto's; see `configureSha256`. */
export type Sha256HexImpl = (input: string | Uint8Array) => string

let native: Sha256HexImpl | null = null

/**
 * Routes `sha256Hex` to a native implementation. The core stays on Web APIs, so it cannot reach node:crypto
 * itself; `import "mycelium-runtime/node"` registers it (about ten times faster than the JavaScript digest).
 * Pass `null` to go back to the JavaScript digest.
 */
export function configureSha256(impl: Sha256HexImpl | null): void {
  native = impl
  ringIn.fill(null)
}

// A redispatch derives its identity from the very same preimages again (args fingerprint, transition key), so
// the last few digests of short strings are remembered and a replay hashes nothing. A small ring compared by
// string equality, not a Map: a Map costs a fresh call more (hashing, insertion, eviction) than a replay saves.
const RING = 16
const MEMO_MAX_CHARS = 2048
const ringIn: (string | null)[] = /* @__PURE__ */ new Array<string | null>(RING).fill(null)
const ringOut: string[] = /* @__PURE__ */ new Array<string>(RING).fill("")
let ringNext = 0

/** Lowercase hex SHA-256, as Python's `hashlib.sha256(...).hexdigest()`. */
export function sha256Hex(input: string | Uint8Array): string {
  if (typeof input !== "string" || input.length > MEMO_MAX_CHARS) {
    return native ? native(input) : sha256HexJs(input)
  }
  for (let i = 0; i < RING; i++) if (ringIn[i] === input) return ringOut[i] as string
  const hex = native ? native(input) : sha256HexJs(input)
  ringIn[ringNext] = input
  ringOut[ringNext] = hex
  ringNext = (ringNext + 1) % RING
  return hex
}

/** The JavaScript digest, whatever is configured. */
export function sha256HexJs(input: string | Uint8Array): string {
  digest(input)
  let s = ""
  for (let i = 0; i < 8; i++) {
    const v = H[i] as number
    s += `${HEX_TABLE[v >>> 24]}${HEX_TABLE[(v >>> 16) & 255]}${HEX_TABLE[(v >>> 8) & 255]}${HEX_TABLE[v & 255]}`
  }
  return s
}
