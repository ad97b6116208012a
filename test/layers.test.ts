// The layers of src/, each importing only from itself and the layers below it, types included (a type a
// lower layer names belongs below it too): the core never depends on what is built on it.
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
  identity: 4,
  telemetry: 4,
  service: 5,
  notify: 6,
  agent: 7,
  executor: 7,
  policy: 8,
  runner: 8,
  cli: 9,
  dashboard: 9,
  mcp: 9,
  adapters: 9,
  testing: 9,
};

function layerOf(file: string): number {
  const [top = ''] = relative(SRC, file).split(sep);
  if (top.endsWith('.ts') || top.endsWith('.js')) return top.startsWith('index.') ? 10 : 0;
  const layer = LAYERS[top];
  if (layer === undefined) throw new Error(`src/${top} has no layer: add it to LAYERS`);
  return layer;
}

/**
 * What a file loads: the specifiers of its imports and re-exports but `import type` and `export type`,
 * bare imports included, and of its dynamic `import()` calls (a computed one as `?`, which no layer allows).
 */
export function loadedModules(
  fileName: string,
  text: string,
  options: { readonly dynamic: boolean; readonly types?: boolean } = { dynamic: true },
): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    // `import { type T }` still loads its module under verbatimModuleSyntax: only `import type` does not.
    if (ts.isImportDeclaration(node) && (options.types === true || !node.importClause?.isTypeOnly)) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (
      ts.isExportDeclaration(node) &&
      (options.types === true || !node.isTypeOnly) &&
      node.moduleSpecifier !== undefined
    ) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (
      options.dynamic &&
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword
    ) {
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
  expect(loadedModules('x.ts', text, { dynamic: false, types: true })).toEqual([
    './a.js',
    './b.js',
    './c.js',
    './d.js',
    './e.js',
    './f.js',
  ]);
});

/** Every TypeScript file of src/. */
function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(SRC, f));
}

/** The files of src/ that `file` loads as it is loaded (its static imports and re-exports of src/). */
function staticImportsOf(file: string): string[] {
  return loadedModules(file, readFileSync(file, 'utf8'), { dynamic: false })
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
}

/** The import cycles of `graph`: each as the files around it, once. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string): void => {
    if (onPath.has(file)) {
      cycles.push(path.slice(path.indexOf(file)));
      return;
    }
    if (done.has(file)) return;
    onPath.add(file);
    path.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return cycles;
}

it('finds a cycle of imports, and none where there is none', () => {
  const cyclic = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  const acyclic = new Map([
    ['a', ['b', 'c']],
    ['b', ['c']],
    ['c', []],
  ]);

  expect([cyclesOf(cyclic), cyclesOf(acyclic)]).toEqual([[['a', 'b', 'c']], []]);
});

it('has no cycle of static imports among the files of src/', () => {
  const files = sourceFiles();
  const graph = new Map(files.map((f) => [f, staticImportsOf(f)]));

  const cycles = cyclesOf(graph).map((c) => c.map((f) => relative(SRC, f)).join(' -> '));

  expect(cycles).toEqual([]);
});

it('has no layer of src/ load code or name a type from a layer above it', () => {
  const files = sourceFiles();
  const upward: string[] = [];
  for (const file of files) {
    for (const spec of loadedModules(file, readFileSync(file, 'utf8'), { dynamic: true, types: true })) {
      if (spec === '?') upward.push(`${relative(SRC, file)} -> a computed import`);
      if (!spec.startsWith('.')) continue;
      const target = normalize(join(dirname(file), spec));
      if (layerOf(target) > layerOf(file)) upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }

  expect(files.length).toBeGreaterThan(50);
  expect(upward).toEqual([]);
});
