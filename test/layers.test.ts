// The layers of src/, each importing only from itself and the layers below it (a type-only import names a
// shape and loads nothing, so it may look up): the core never depends on what is built on it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** The relative imports of a file that load code (not `import type` / `export type`). */
function valueImports(text: string): string[] {
  const found: string[] = [];
  const statement = /(?:^|\n)\s*(import|export)\s+(type\s+)?[^;'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;
  for (const m of text.matchAll(statement)) if (m[2] === undefined) found.push(m[3] as string);
  for (const m of text.matchAll(/import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) found.push(m[1] as string);
  return found;
}

it('has no layer of src/ load code from a layer above it', () => {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(SRC, f));
  const upward: string[] = [];
  for (const file of files) {
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      const target = normalize(join(dirname(file), spec));
      if (layerOf(target) > layerOf(file)) upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }

  expect(files.length).toBeGreaterThan(50);
  expect(upward).toEqual([]);
});
