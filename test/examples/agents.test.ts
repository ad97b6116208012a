// The examples as a reader runs them: importing leash by its package name (resolved to src/ through the
// `leash-source` export condition, as `npm run example*` does), offline, to their end.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const EXAMPLES = join(ROOT, 'examples');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

it.each(readdirSync(EXAMPLES).filter((f) => f.endsWith('.ts')))(
  'imports leash in %s by its package name, as a user would',
  (file) => {
    const source = readFileSync(join(EXAMPLES, file), 'utf8');

    expect(source).not.toMatch(/from '\.\.\//);
  },
);

describe.each([
  ['AI SDK', 'ai-sdk-agent.ts', /spent 0\.0052 of 0\.05 dollars in 2 step\(s\)/],
  ['LangChain', 'langchain-agent.ts', /spent 0\.001252 of 0\.05 dollars in 2 step\(s\)/],
  ['OpenAI Agents SDK', 'openai-agents.ts', /spent 0\.001252 of 0\.05 dollars in 2 step\(s\)/],
])('the %s example, run offline', (_name, file, spent) => {
  let run: SpawnSyncReturns<string>;
  beforeAll(() => {
    run = spawnSync(process.execPath, ['--conditions=leash-source', '--import', TSX, join(EXAMPLES, file)], {
      encoding: 'utf8',
      env: { ...process.env, OPENAI_API_KEY: '' },
      timeout: 60_000,
    });
  }, 60_000);

  it('runs to its end without an error', () => {
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('pauses the file write for a person and says that the example approves it itself', () => {
    expect(run.stdout).toMatch(
      /^write_file waits for a person: approval \S+\n {2}the example approves it itself, as example-reviewer/m,
    );
    expect(run.stdout).not.toMatch(/leash approve [\w-]/);
  });

  it('writes the file once resumed', () => {
    expect(run.stdout).toContain('summary.txt: "leash: budgets, limits, approvals."');
  });

  it('reports what it spent', () => {
    expect(run.stdout).toMatch(spent);
  });
});
