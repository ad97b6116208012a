// The layers of src/, each importing only from itself and the layers below it (a type-only import names a
// shape and loads nothing, so it may look up): the core never depends on what is built on it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** Each top folder's layer, lowest first; a file directly in src/ (errors, money, json, ids…) is 0. */
const LAYERS: Readonly<Record<string, number>> = {
  guardrails: 1,
  audit: 2,
  store: 3,
  service: 4,
  agent: 5,
  executor: 5,
  policy: 6,
  runner: 6,
  cli: 7,
  dashboard: 7,
  mcp: 7,
  adapters: 7,
  testing: 7,
};

function layerOf(file: string): number {
  const [top = ''] = relative(SRC, file).split(sep);
  if (top.endsWith('.ts') || top.endsWith('.js')) return top.startsWith('index.') ? 8 : 0;
  const layer = LAYERS[top];
  if (layer === undefined) throw new Error(`src/${top} has no layer: add it to LAYERS`);
  return layer;
}

/**
 * What a file loads: the specifiers of its imports and re-exports but `import type` and `export type`,
 * bare imports included, and of its dynamic `import()` calls (a computed one as `?`, which no layer allows).
 */
export function loadedModules(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    // `import { type T }` still loads its module under verbatimModuleSyntax: only `import type` does not.
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier !== undefined) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      found.push(arg !== undefined && ts.isStringLiteralLike(arg) ? arg.text : '?');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

it('finds every way a file loads a module, and skips the type-only ones', () => {
  const text = [
    "import './a.js';",
    "import { x } from './b.js';",
    "import type { T } from './c.js';",
    "import { type U } from './d.js';",
    "export { y } from './e.js';",
    "export type { V } from './f.js';",
    "const m = () => import('./g.js');",
    'const n = (p: string) => import(p);',
  ].join('\n');

  expect(loadedModules('x.ts', text)).toEqual(['./a.js', './b.js', './d.js', './e.js', './g.js', '?']);
});

it('has no layer of src/ load code from a layer above it', () => {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(SRC, f));
  const upward: string[] = [];
  for (const file of files) {
    for (const spec of loadedModules(file, readFileSync(file, 'utf8'))) {
      if (spec === '?') upward.push(`${relative(SRC, file)} -> a computed import`);
      if (!spec.startsWith('.')) continue;
      const target = normalize(join(dirname(file), spec));
      if (layerOf(target) > layerOf(file)) upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }

  expect(files.length).toBeGreaterThan(50);
  expect(upward).toEqual([]);
});
