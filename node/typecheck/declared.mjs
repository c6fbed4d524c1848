// What a .d.ts file declares as a type checker sees it: each exported class's public members
// (instance and static, with those merged in from interfaces, such as the Sync twins that
// index.d.ts derives from the Promise methods), and its exported functions and constants.
// Shared by backing.mjs and test/package.test.mjs.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const ts = createRequire(join(here, '..', 'package.json'))('typescript')

const isPrivate = (symbol) => (ts.getDeclarationModifierFlagsFromSymbol(symbol) & ts.ModifierFlags.Private) !== 0
// Members named by a symbol (`[Symbol.asyncDispose]`) have no name to check.
const named = (symbol) => !symbol.name.startsWith('__@')

/** `{ file, classes: Map<class, Set<member>>, names: Set<function or constant> }` of `dir/file`. */
export function declared(dir, file) {
  const path = join(dir, file)
  const program = ts.createProgram([path], { noEmit: true, strict: true, typeRoots: [join(here, '..', 'node_modules', '@types')] })
  const checker = program.getTypeChecker()
  const module = checker.getSymbolAtLocation(program.getSourceFile(path))
  const classes = new Map()
  const names = new Set()
  for (const symbol of checker.getExportsOfModule(module)) {
    if (symbol.flags & ts.SymbolFlags.Class) {
      const members = new Set()
      const sides = [checker.getDeclaredTypeOfSymbol(symbol), checker.getTypeOfSymbol(symbol)]
      for (const side of sides) {
        for (const member of checker.getPropertiesOfType(side)) {
          if (named(member) && !isPrivate(member) && member.name !== 'prototype') members.add(member.name)
        }
      }
      const constructors = symbol.members?.get(ts.InternalSymbolName.Constructor)?.declarations ?? []
      if (constructors.some((d) => (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Private) === 0)) members.add('constructor')
      classes.set(symbol.name, members)
    } else if (symbol.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Variable)) {
      names.add(symbol.name)
    }
  }
  return { file, classes, names }
}
