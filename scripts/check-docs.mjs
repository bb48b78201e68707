// Every TypeScript code block in README.md and docs/**/*.md compiles, and every link to a page, file or heading
// resolves (`npm test` runs this). Each block becomes its own module that imports `mycelium-runtime` from src/ (mapped through package.json's exports, so a new entry
// needs no change here) and sees the placeholders of docs/prelude.d.ts (the reader's own gateway, env,
// ...). A fragment opts out with ```ts nocheck; use it sparingly.
// Usage: node scripts/check-docs.mjs [page.md ...]   (default: README.md and docs/**/*.md)
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(".")
// Inside node_modules so the blocks resolve the same third-party packages the project has installed.
const out = join(root, "node_modules", ".cache", `check-docs-${process.pid}`)

const pages = (dir) =>
  existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
        d.isDirectory() ? pages(join(dir, d.name)) : d.name.endsWith(".md") ? [join(dir, d.name)] : [],
      )
    : []
const given = process.argv.slice(2)
const files = given.length ? given : ["README.md", ...pages("docs").map((p) => relative(root, p))]

const FENCE = /^(\s*)(```+|~~~+)\s*([\w-]*)(.*)$/
const blocks = []
let skipped = 0
// Links to other pages and files, checked below: a renamed heading or moved file breaks no type check.
const links = []
const headings = new Map()
// GitHub's anchor for a heading: lower case, punctuation dropped (code spans keep their text), spaces as
// hyphens, a repeated heading numbered.
const slugs = (lines) => {
  const seen = new Map()
  const out = new Set()
  let fenced = false
  for (const l of lines) {
    if (FENCE.test(l)) fenced = !fenced
    const h = !fenced && /^#{1,6}\s+(.*)$/.exec(l)
    if (!h) continue
    const base = h[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-")
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n ? `${base}-${n}` : base)
  }
  return out
}
for (const file of files) {
  const lines = readFileSync(file, "utf8").split("\n")
  headings.set(resolve(file), slugs(lines))
  for (let i = 0; i < lines.length; i++) {
    const m = FENCE.exec(lines[i])
    if (!m) {
      for (const [, url] of lines[i].matchAll(/\]\(([^)\s]+)\)/g))
        if (!/^[a-z]+:/.test(url)) links.push({ file, line: i + 1, url })
      continue
    }
    const [, indent, fence, lang, rest] = m
    const end = lines.findIndex(
      (l, j) => j > i && l.trimStart().startsWith(fence) && l.trim() === l.trim()[0].repeat(l.trim().length),
    )
    const close = end === -1 ? lines.length : end
    if (["ts", "typescript", "tsx"].includes(lang)) {
      if (/\bnocheck\b/.test(rest)) skipped++
      else {
        const body = lines.slice(i + 1, close).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        blocks.push({ file, line: i + 2, body, tsx: lang === "tsx" })
      }
    }
    i = close
  }
}

const broken = []
for (const { file, line, url } of links) {
  const [path, anchor] = url.split("#")
  const target = path ? resolve(dirname(file), decodeURIComponent(path)) : resolve(file)
  if (!existsSync(target)) broken.push(`${file}:${line}: no file ${url}`)
  else if (anchor && target.endsWith(".md")) {
    if (!headings.has(target)) headings.set(target, slugs(readFileSync(target, "utf8").split("\n")))
    if (!headings.get(target).has(anchor)) broken.push(`${file}:${line}: no heading #${anchor} in ${url}`)
  }
}
if (broken.length) {
  console.error(broken.join("\n"))
  console.error(`docs: ${broken.length} broken link${broken.length === 1 ? "" : "s"}`)
  process.exit(1)
}

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

// "mycelium-runtime/x" → the source file behind dist/x.js in the exports map.
const pkg = JSON.parse(readFileSync("package.json", "utf8"))
const paths = {}
for (const [entry, target] of Object.entries(pkg.exports)) {
  const js = typeof target === "string" ? target : target.default
  if (!js.endsWith(".js")) continue
  const src = join(root, js.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"))
  paths[entry === "." ? pkg.name : `${pkg.name}/${entry.slice(2)}`] = [src]
}

const names = blocks.map((b, n) => {
  const name = `${String(n).padStart(3, "0")}-${b.file.replace(/[^\w]+/g, "_")}.${b.tsx ? "tsx" : "ts"}`
  // `export {}` makes every block a module, so two blocks may both declare `const ledger`.
  writeFileSync(join(out, name), `${b.body.join("\n")}\nexport {}\n`)
  return name
})
writeFileSync(
  join(out, "tsconfig.json"),
  JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      lib: ["ES2022", "ES2024.String", "DOM", "DOM.Iterable"],
      module: "ESNext",
      moduleResolution: "Bundler",
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      verbatimModuleSyntax: false,
      esModuleInterop: true,
      types: ["node"],
      paths,
    },
    files: [
      ...names,
      join(root, "docs", "prelude.d.ts"),
      join(root, "src", "types", "cloudflare-workers.d.ts"),
    ],
  }),
)

const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", out], {
  encoding: "utf8",
})
rmSync(out, { recursive: true, force: true })
// Point each error at the Markdown line it comes from.
const report = (tsc.stdout + tsc.stderr).replace(
  /^(?:[^\s(]*\/)?(\d{3})-\w+\.tsx?\((\d+),(\d+)\)/gm,
  (_, n, line, col) => {
    const b = blocks[Number(n)]
    return `${b.file}:${b.line + Number(line) - 1}:${col}`
  },
)
const errors = (report.match(/error TS\d+/g) ?? []).length
console.log(
  `docs: ${links.length} links resolved, ${blocks.length} TypeScript blocks in ${files.length} pages type-checked${skipped ? `, ${skipped} marked nocheck` : ""}`,
)
if (tsc.status !== 0) {
  console.error(report.trimEnd())
  console.error(`docs: ${errors} type error${errors === 1 ? "" : "s"} in code blocks`)
  process.exit(1)
}
