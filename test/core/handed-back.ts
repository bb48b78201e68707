// Where the source hands a promise back to be adopted instead of awaiting it, walked with the TypeScript checker.
// workerd reports a promise that is already rejected when an async function returns it (`return p`) or a then()
// callback does as uncaught, handled or not (test/workers/uncaught.ts); `return await p` is not. Both shapes are
// found here by type, so a call whose function is async is found wherever it is written.
import { relative } from "node:path"
import ts from "typescript"

export interface HandBack {
  /** `file:line`, for the reader. */
  at: string
  /** `file function: expression`, stable across edits elsewhere in the file: what an exception names. */
  key: string
}

/**
 * Whether a value of this type is a promise, by a `then` member; `vague` when the type says nothing (unknown, any, an
 * unconstrained type parameter): a call's result typed so is often a caller's function, and that may be async.
 */
function promiseType(checker: ts.TypeChecker, type: ts.Type): boolean | "vague" {
  if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return "vague"
  if (type.isUnion()) {
    const each = type.types.map((t) => promiseType(checker, t))
    return each.includes(true) || (each.includes("vague") && "vague")
  }
  if (type.flags & ts.TypeFlags.TypeParameter) {
    const base = checker.getBaseConstraintOfType(type)
    return !base || base === type ? "vague" : promiseType(checker, base)
  }
  return checker.getPropertyOfType(type, "then") !== undefined
}

/** Whether `e`, handed back as it is, may be a promise: by its type, or a call whose result's type says nothing. */
function mayBePromise(checker: ts.TypeChecker, e: ts.Expression): boolean {
  if (
    ts.isParenthesizedExpression(e) ||
    ts.isAsExpression(e) ||
    ts.isSatisfiesExpression(e) ||
    ts.isNonNullExpression(e) ||
    ts.isTypeAssertionExpression(e)
  )
    return mayBePromise(checker, e.expression)
  if (ts.isAwaitExpression(e)) return false
  if (ts.isConditionalExpression(e))
    return mayBePromise(checker, e.whenTrue) || mayBePromise(checker, e.whenFalse)
  if (
    ts.isBinaryExpression(e) &&
    [
      ts.SyntaxKind.QuestionQuestionToken,
      ts.SyntaxKind.BarBarToken,
      ts.SyntaxKind.AmpersandAmpersandToken,
    ].includes(e.operatorToken.kind)
  )
    return mayBePromise(checker, e.left) || mayBePromise(checker, e.right)
  const is = promiseType(checker, checker.getTypeAtLocation(e))
  return is === true || (is === "vague" && ts.isCallExpression(e) && !ownSyncFunction(checker, e))
}

/**
 * Whether `call` calls a function or method declared with a body and not async, a transform of values the reader can
 * see (escaped(), reanswer()), rather than a function it was handed (a tool's body), which may be async.
 */
function ownSyncFunction(checker: ts.TypeChecker, call: ts.CallExpression): boolean {
  const decl = checker.getResolvedSignature(call)?.getDeclaration()
  return (
    decl !== undefined &&
    (ts.isFunctionDeclaration(decl) || ts.isMethodDeclaration(decl)) &&
    decl.body !== undefined &&
    !isAsync(decl)
  )
}

/** The expressions `fn` returns: its expression body, or its own return statements (not those of nested functions). */
function returned(fn: ts.FunctionLikeDeclaration): ts.Expression[] {
  if (!fn.body) return []
  if (!ts.isBlock(fn.body)) return [fn.body]
  const out: ts.Expression[] = []
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n)) return
    if (ts.isReturnStatement(n) && n.expression) out.push(n.expression)
    ts.forEachChild(n, visit)
  }
  ts.forEachChild(fn.body, visit)
  return out
}

const isAsync = (fn: ts.SignatureDeclaration): boolean =>
  (ts.getCombinedModifierFlags(fn as ts.Declaration) & ts.ModifierFlags.Async) !== 0 &&
  !(ts.isFunctionLike(fn) && "asteriskToken" in fn && fn.asteriskToken)

/** An expression as an exception names it: calls by their callee, literals and function bodies elided. */
function summary(e: ts.Expression): string {
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e))
    return summary(e.expression)
  if (ts.isCallExpression(e)) return `${summary(e.expression)}()`
  if (ts.isConditionalExpression(e)) return `… ? ${summary(e.whenTrue)} : ${summary(e.whenFalse)}`
  if (ts.isObjectLiteralExpression(e)) return "{…}"
  if (ts.isArrowFunction(e) || ts.isFunctionExpression(e)) return `${isAsync(e) ? "async " : ""}() => …`
  const text = e.getText().replace(/\s+/g, " ")
  return text.length > 40 ? `${text.slice(0, 39)}…` : text
}

/** The name a reader finds the site by: the nearest named function, method or class member, with its class. */
function owner(node: ts.Node): string {
  const names: string[] = []
  for (let n: ts.Node | undefined = node; n; n = n.parent) {
    const name =
      ts.isFunctionDeclaration(n) ||
      ts.isMethodDeclaration(n) ||
      ts.isClassDeclaration(n) ||
      ts.isPropertyDeclaration(n) ||
      ts.isGetAccessor(n) ||
      ts.isSetAccessor(n)
        ? n.name
        : ts.isConstructorDeclaration(n)
          ? "constructor"
          : ts.isVariableDeclaration(n) || ts.isPropertyAssignment(n)
            ? n.name
            : undefined
    if (name === undefined) continue
    names.unshift(typeof name === "string" ? name : name.getText())
    if (ts.isClassDeclaration(n) || (ts.isVariableDeclaration(n) && ts.isSourceFile(n.parent.parent.parent)))
      break
  }
  return names.join(".") || "(module)"
}

/**
 * Every un-awaited `return` of a value that may be a promise inside an async function (an async arrow's expression
 * body included), and every then()/catch() callback that may return one, in `files` of `program`.
 */
export function handBacks(program: ts.Program, files: readonly string[], root: string): HandBack[] {
  const checker = program.getTypeChecker()
  const found: HandBack[] = []
  for (const file of files) {
    const sf = program.getSourceFile(file)
    if (!sf) throw new Error(`not in the program: ${file}`)
    const name = relative(root, sf.fileName)
    const report = (site: ts.Node, what: string, expr: ts.Expression) => {
      const line = sf.getLineAndCharacterOfPosition(site.getStart()).line + 1
      found.push({ at: `${name}:${line}`, key: `${name} ${owner(site)}: ${what} ${summary(expr)}` })
    }
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && "body" in node && node.body && isAsync(node))
        for (const e of returned(node))
          if (mayBePromise(checker, e)) report(e, e === node.body ? "=>" : "return", e)
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        (node.expression.name.text === "then" || node.expression.name.text === "catch")
      ) {
        const method = `${node.expression.name.text}(cb)`
        for (const cb of node.arguments) {
          if (ts.isArrowFunction(cb) || ts.isFunctionExpression(cb)) {
            // An async callback's own promise is already rejected when its body throws before its first await.
            if (isAsync(cb) || returned(cb).some((e) => mayBePromise(checker, e))) report(cb, method, cb)
            continue
          }
          const results = checker
            .getTypeAtLocation(cb)
            .getCallSignatures()
            .map((s) => promiseType(checker, checker.getReturnTypeOfSignature(s)))
          if (results.some((r) => r !== false)) report(cb, method, cb)
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(sf)
  }
  return found
}
