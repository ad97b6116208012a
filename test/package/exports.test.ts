// Each export has a `leash-source` condition naming the TypeScript file its compiled module is built
// from: the examples, `tsc` and `npm run example*` import leash by its package name and, under that
// condition (tsconfig.json customConditions, node --conditions), run the source without a build.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { exports } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
};
/** Each exported module with its conditions, in the order they are matched. */
const modules = Object.entries(exports).flatMap(([path, conditions]) =>
  typeof conditions === 'string' ? [] : [{ path, conditions }],
);

it('has modules to export', () => {
  expect(modules.length).toBeGreaterThan(1);
});

it.each(modules)(
  'names first, as the source of $path, the TypeScript file its import is built from',
  ({ conditions }) => {
    const source = conditions['import']?.replace(/^\.\/dist\/(.*)\.js$/, './src/$1.ts');

    expect(Object.entries(conditions)[0]).toEqual(['leash-source', source]);
    expect(existsSync(join(ROOT, source as string))).toBe(true);
  },
);
