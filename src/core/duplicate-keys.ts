// Duplicate member names in JSON text. JSON.parse and json.loads keep the last, so a signed record with an earlier
// `"status": "failed"` put before its own still verified, while the text (and a reader keeping the first) said otherwise.

/**
 * Whether an object in `text` names a member twice, names compared decoded (`"a"`, `"\u0061"`). Meant for JSON that
 * parsed; on other text it answers without throwing.
 */
export function hasDuplicateKey(text: string): boolean {
  // Per open container: the names seen, or null for an array. No recursion: any depth that parsed is scanned.
  const open: Array<Set<string> | null> = []
  let key = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      let j = i + 1
      let escaped = false
      for (let d = text.charCodeAt(j); d !== 0x22 && j < text.length; d = text.charCodeAt(j)) {
        if (d === 0x5c) {
          escaped = true
          j++
        }
        j++
      }
      const names = open[open.length - 1]
      if (key && names) {
        let k = text.slice(i + 1, j)
        try {
          if (escaped) k = JSON.parse(text.slice(i, j + 1)) as string
        } catch {
          return false
        }
        if (names.has(k)) return true
        names.add(k)
      }
      key = false
      i = j
    } else if (c === 0x7b) {
      open.push(new Set())
      key = true
    } else if (c === 0x5b) open.push(null)
    else if (c === 0x7d || c === 0x5d) open.pop()
    else if (c === 0x2c) key = open[open.length - 1] != null
  }
  return false
}
