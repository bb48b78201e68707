// Every relative link in README.md and docs/*.md reaches a file of this repository, and every #anchor a heading of
// the page it names (GitHub's slugs), so a renamed page or heading cannot leave a reader at a dead end.
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize } from "node:path"
import { describe, expect, it } from "vitest"

const pages = [
  "README.md",
  ...readdirSync("docs")
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f)),
]

/** Markdown outside fenced code blocks, where a link is text, not a link. */
function prose(text: string): string {
  let inFence = false
  return text
    .split("\n")
    .filter((line) => {
      if (/^\s*(```|~~~)/.test(line)) inFence = !inFence
      return !inFence
    })
    .join("\n")
}

/** GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  for (const m of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (m[1] as string)
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-")
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n ? `${base}-${n}` : base)
  }
  return out
}

describe("links in the README and docs", () => {
  it("GitHub's slugs: code, punctuation and repeats", () => {
    expect([...anchors("# A `b`: c (d)\n## Same\n## Same\n```\n# not a heading\n```\n")]).toEqual([
      "a-b-c-d",
      "same",
      "same-1",
    ])
  })

  it("every relative link reaches a file, and every anchor a heading of it", () => {
    const broken: string[] = []
    let checked = 0
    for (const page of pages) {
      const text = readFileSync(page, "utf8")
      for (const m of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] as string
        if (/^[a-z]+:/i.test(target)) continue
        checked++
        const [path, anchor] = target.split("#") as [string, string | undefined]
        const file = path ? normalize(join(dirname(page), path)) : page
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no file ${file})`)
          continue
        }
        if (anchor && file.endsWith(".md") && !anchors(readFileSync(file, "utf8")).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${file})`)
      }
    }
    expect(checked).toBeGreaterThan(50)
    expect(broken).toEqual([])
  })
})
