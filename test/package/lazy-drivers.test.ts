// `import 'leash'` loads no database driver: each is loaded by the first store that needs it. A child
// process imports the package afresh and reports which drivers it has loaded (test/package/loaded-drivers.mjs),
// from the TypeScript source always, and from the built dist/ on CI, where `npm run build` runs first.
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { onCI } from '../support/ci.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROBE = fileURLToPath(new URL('./loaded-drivers.mjs', import.meta.url));

interface Loaded {
  afterImport: string[];
  frameworks: string[];
  lazy: string[];
  afterSqliteStore: string[];
  afterPostgresStore: string[];
}

function probe(entry: string, execArgv: readonly string[]): Loaded {
  const r = spawnSync(process.execPath, [...execArgv, PROBE, pathToFileURL(`${ROOT}/${entry}`).href], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`the probe exited with ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Loaded;
}

/** An entry probed from its TypeScript source always, and from the built dist/ on CI. */
const fromSourceAndDist = (path: string, own: readonly string[] = []) => [
  { entry: `src/${path}.ts`, execArgv: ['--import', 'tsx'], run: true, own },
  { entry: `dist/${path}.js`, execArgv: [] as string[], run: onCI(), own },
];

/** Probes `entry` once before the describe's tests when `run`; the result, read in a test. */
function probedOnce(entry: string, execArgv: readonly string[], run: boolean): () => Loaded {
  let loaded: Loaded | undefined;
  beforeAll(() => {
    if (run) loaded = probe(entry, execArgv);
  }, 60_000);
  return () => loaded as Loaded;
}

describe.each(fromSourceAndDist('index'))('the drivers $entry loads', ({ entry, execArgv, run }) => {
  const loaded = probedOnce(entry, execArgv, run);

  it.runIf(run)('are none on import', () => {
    expect(loaded().afterImport).toEqual([]);
  });

  it.runIf(run)('come with no agent framework on import', () => {
    expect(loaded().frameworks).toEqual([]);
  });

  it.runIf(run)('come without the OpenID Connect client on import', () => {
    expect(loaded().lazy).toEqual([]);
  });

  it.runIf(run)('are better-sqlite3 alone once a SqliteStore is constructed', () => {
    expect(loaded().afterSqliteStore).toEqual(['better-sqlite3']);
  });

  it.runIf(run)('include pg once a PostgresStore is constructed with a url', () => {
    expect(loaded().afterPostgresStore).toContain('pg');
  });
});

describe.each([
  ...fromSourceAndDist('adapters/ai-sdk/index', ['ai']),
  ...fromSourceAndDist('adapters/langchain/index', ['langchain', '@langchain/core', '@langchain/langgraph']),
  ...fromSourceAndDist('adapters/openai-agents/index', ['@openai/agents']),
])('the drivers $entry loads', ({ entry, execArgv, run, own }) => {
  const loaded = probedOnce(entry, execArgv, run);

  it.runIf(run)('are none on import', () => {
    expect(loaded().afterImport).toEqual([]);
  });

  it.runIf(run)('come with its own framework only', () => {
    expect(loaded().frameworks.filter((f) => !own.includes(f))).toEqual([]);
    expect(loaded().frameworks).toContain(own[0]);
  });
});

describe.each(fromSourceAndDist('dashboard/server'))('what $entry loads', ({ entry, execArgv, run }) => {
  const loaded = probedOnce(entry, execArgv, run);

  it.runIf(run)('is not the OpenID Connect client, loaded once a provider is given', () => {
    expect(loaded().lazy).toEqual([]);
  });
});
