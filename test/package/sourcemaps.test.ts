// A user debugging leash lands in its TypeScript: the source maps of dist/*.js (stack traces) and of
// dist/*.d.ts (an editor's "go to definition") name files the package ships. It reads the built dist/, so
// it runs on CI (where `npm run build` runs first) or with LEASH_PACK_TEST=1.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { onCI } from '../support/ci.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUN = onCI() || process.env['LEASH_PACK_TEST'] === '1';

interface SourceMap {
  readonly sourceRoot?: string;
  readonly sources: readonly string[];
}

/** The files `npm pack` puts in the tarball, as paths relative to the package root. */
function packedFiles(): Set<string> {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [pack] = JSON.parse(out) as [{ files: { path: string }[] }];
  return new Set(pack.files.map((f) => f.path));
}

/** Each source a shipped map names, as a path relative to the package root, with the map naming it. */
function mappedSources(packed: Set<string>, suffix: string): { map: string; source: string }[] {
  return [...packed]
    .filter((file) => file.endsWith(suffix))
    .flatMap((map) => {
      const { sourceRoot = '', sources } = JSON.parse(readFileSync(join(ROOT, map), 'utf8')) as SourceMap;
      return sources.map((s) => ({ map, source: posix.join(posix.dirname(map), sourceRoot, s) }));
    });
}

describe.runIf(RUN)(
  'the source maps the package ships (reads dist/: runs on CI or with LEASH_PACK_TEST=1)',
  () => {
    let packed: Set<string>;
    beforeAll(() => {
      packed = packedFiles();
    }, 60_000);

    it.each(['.js.map', '.d.ts.map'])('name only files the package ships, in every %s', (suffix) => {
      const named = mappedSources(packed, suffix);

      expect(named.length).toBeGreaterThan(100);
      expect(named.filter(({ source }) => !packed.has(source))).toEqual([]);
    });

    it('map a stack trace through the compiled code to a TypeScript file the package ships', () => {
      const script = `import('./dist/index.js').then((m) => m.AutonomyGuardrails.create({ maxSteps: 0 })).catch((e) => console.log(e.stack))`;
      const node = spawnSync(process.execPath, ['--enable-source-maps', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
      });
      const frame = new RegExp(`${ROOT.replace(/[/\\^$.*+?()[\]{}|]/g, '\\$&')}(\\S+\\.ts):\\d+:\\d+`).exec(
        node.stdout,
      );

      expect(node.stdout).toMatch(/^GuardrailValidationError/);
      expect(frame?.[1]).toMatch(/^src\//);
      expect(packed.has(frame?.[1] as string)).toBe(true);
    });
  },
);
