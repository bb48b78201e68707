// What a consumer of the published .d.ts files sees, walked with the TypeScript compiler over one program: every
// symbol an exports-map entry exports, and every package-declared type those reach. declarations.test.ts builds the
// declarations and asserts on the result; this module only reads them.
import { join, relative } from "node:path"
import ts from "typescript"

export interface Surface {
  /** Declarations walked: the entries' exports and the package-declared types they reach. */
  symbols: number
  /** Parameters of functions, methods, constructors and call signatures whose types were checked for names. */
  parameters: number
  /** Each explicit `any` type node, as `file:line in Symbol`. */
  anys: string[]
  /** Package-declared types a consumer meets but cannot import, as `Name (file) via Symbol`. */
  unnamed: string[]
}

type Exports = Record<string, string | { types: string }>

const isPrivate = (node: ts.Node): boolean =>
  (ts.canHaveModifiers(node) &&
    (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)) ||
  ((ts.isPropertyDeclaration(node) || ts.isMethodDeclaration(node)) && ts.isPrivateIdentifier(node.name))

/** The declaration files of `exports` (paths under ./dist/), read from `outDir` instead. */
export const entryFiles = (exports: Exports, outDir: string): string[] =>
  Object.values(exports).flatMap((t) =>
    typeof t === "object" ? [join(outDir, t.types.replace(/^\.\/dist\//, ""))] : [],
  )

export const typeSurface = (entries: string[], outDir: string): Surface => {
  const program = ts.createProgram(entries, {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2022,
    // Only the package's own declarations are walked: the standard library and @types are not read (faster).
    noLib: true,
    types: [],
  })
  const checker = program.getTypeChecker()
  const inPackage = (d: ts.Node) => d.getSourceFile().fileName.startsWith(outDir)
  const where = (d: ts.Node) => {
    const sf = d.getSourceFile()
    return `${relative(outDir, sf.fileName)}:${sf.getLineAndCharacterOfPosition(d.getStart()).line + 1}`
  }
  const resolve = (s: ts.Symbol | undefined) =>
    s && s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s

  // What a consumer can import: the symbols the entries export, after their aliases, with the names they have there.
  const exported = new Map<ts.Symbol, Set<string>>()
  const queue: [ts.Symbol, string][] = []
  for (const file of entries) {
    const sf = program.getSourceFile(file)
    const mod = sf && checker.getSymbolAtLocation(sf)
    if (!mod) throw new Error(`no declarations at ${file}`)
    for (const s of checker.getExportsOfModule(mod)) {
      const target = resolve(s)
      if (!target) continue
      exported.set(target, (exported.get(target) ?? new Set()).add(s.name))
      queue.push([target, s.name])
    }
  }

  const surface: Surface = { symbols: 0, parameters: 0, anys: [], unnamed: [] }
  const seen = new Set<ts.Symbol>()
  const unnamed = new Set<string>()

  /** The package-declared symbol a type-position node names, if any. */
  const named = (node: ts.Node): ts.Symbol | undefined => {
    const at = ts.isTypeReferenceNode(node)
      ? node.typeName
      : ts.isExpressionWithTypeArguments(node)
        ? node.expression
        : ts.isTypeQueryNode(node)
          ? node.exprName
          : ts.isImportTypeNode(node)
            ? node.qualifier
            : undefined
    if (!at) return undefined
    const s = resolve(checker.getSymbolAtLocation(ts.isQualifiedName(at) ? at.right : at))
    return s && !(s.flags & ts.SymbolFlags.TypeParameter) && s.declarations?.some(inPackage) ? s : undefined
  }

  /** Every package-declared symbol named inside `type`. */
  const namedIn = (type: ts.Node | undefined): ts.Symbol[] => {
    const out: ts.Symbol[] = []
    const visit = (n: ts.Node) => {
      const s = named(n)
      if (s) out.push(s)
      n.forEachChild(visit)
    }
    if (type) visit(type)
    return out
  }

  /** A consumer who must write this type (an option, a callback, a field they read) needs its name. */
  const needsName = (type: ts.Node | undefined, kinds: ts.SymbolFlags, via: string) => {
    for (const s of namedIn(type)) {
      if (!(s.flags & kinds) || exported.get(s)?.has(s.name)) continue
      const d = s.declarations?.[0]
      const line = `${s.name} (${d ? relative(outDir, d.getSourceFile().fileName) : "?"}) via ${via}`
      if (!unnamed.has(line)) {
        unnamed.add(line)
        surface.unnamed.push(line)
      }
    }
  }

  const walk = (decl: ts.Node, owner: string) => {
    const visit = (n: ts.Node, path: string) => {
      if (isPrivate(n)) return
      const name =
        (ts.isClassElement(n) || ts.isTypeElement(n)) && n.name && !ts.isComputedPropertyName(n.name)
          ? `${path}.${n.name.getText()}`
          : path
      if (n.kind === ts.SyntaxKind.AnyKeyword) surface.anys.push(`${where(n)} in ${name}`)
      const s = named(n)
      if (s && !seen.has(s)) queue.push([s, s.name])
      if (ts.isParameter(n) && ts.isFunctionLike(n.parent)) {
        surface.parameters++
        needsName(
          n.type,
          ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class,
          `${name}(${n.name.getText()})`,
        )
      }
      if (ts.isFunctionLike(n) && n.type)
        needsName(n.type, ts.SymbolFlags.Interface | ts.SymbolFlags.Class, `${name}() return`)
      if ((ts.isPropertyDeclaration(n) || ts.isPropertySignature(n)) && n.type)
        needsName(n.type, ts.SymbolFlags.Interface | ts.SymbolFlags.Class, name)
      n.forEachChild((c) => visit(c, name))
    }
    visit(decl, owner)
  }

  for (let next = queue.shift(); next; next = queue.shift()) {
    const [s, owner] = next
    if (seen.has(s)) continue
    seen.add(s)
    // A namespace (`export * as x`) is its exports, not the whole file that declares it.
    if (s.flags & ts.SymbolFlags.ValueModule) {
      for (const e of checker.getExportsOfModule(s)) queue.push([resolve(e) ?? e, `${owner}.${e.name}`])
      continue
    }
    for (const d of s.declarations ?? []) {
      if (!inPackage(d)) continue
      surface.symbols++
      walk(d, owner)
    }
  }
  return surface
}
