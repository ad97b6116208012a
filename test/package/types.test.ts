// The published declarations show the public API only: members marked @internal in the source are
// stripped from dist/ (tsconfig.build.json `stripInternal`). It reads the built dist/, so it runs on CI
// (where `npm run build` runs first) or with LEASH_PACK_TEST=1.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { onCI } from '../support/ci.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUN = onCI() || process.env['LEASH_PACK_TEST'] === '1';

/** Every file under `dir` whose name ends with `suffix`, as paths relative to `dir`. */
function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith(suffix));
}

it.runIf(RUN)('publishes no declaration marked @internal', () => {
  const internal = filesUnder(join(ROOT, 'src'), '.ts').filter((f) =>
    readFileSync(join(ROOT, 'src', f), 'utf8').includes('@internal'),
  );
  expect(internal.length).toBeGreaterThan(0);

  const published = filesUnder(join(ROOT, 'dist'), '.d.ts').filter((f) =>
    readFileSync(join(ROOT, 'dist', f), 'utf8').includes('@internal'),
  );

  expect(published).toEqual([]);
});

it.runIf(RUN)('publishes classes made only by leash with a private constructor', () => {
  for (const file of ['agent/modelCalls.d.ts', 'service/BudgetReservation.d.ts']) {
    expect(readFileSync(join(ROOT, 'dist', file), 'utf8')).toContain('private constructor();');
  }
});

it.runIf(RUN)('publishes no module that src/ no longer holds', () => {
  const stale = filesUnder(join(ROOT, 'dist'), '.js').filter(
    (f) => !existsSync(join(ROOT, 'src', f.replace(/\.js$/, '.ts'))),
  );

  expect(stale).toEqual([]);
});
