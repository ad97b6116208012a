import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

it.each([
  ['AI SDK', 'ai-sdk-agent.ts', /spent 0\.0052 of 0\.05 dollars in 2 step\(s\)/],
  ['LangChain', 'langchain-agent.ts', /spent 0\.001252 of 0\.05 dollars in 2 step\(s\)/],
  ['OpenAI Agents SDK', 'openai-agents.ts', /spent 0\.001252 of 0\.05 dollars in 2 step\(s\)/],
])(
  'runs the %s example offline to its end: paused for approval, resumed, the file written once',
  (_name, file, spent) => {
    const env = { ...process.env, OPENAI_API_KEY: '' };
    const r = spawnSync(process.execPath, ['--import', TSX, join(ROOT, 'examples', file)], {
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });

    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/write_file waits for a person: npx leash approve \S+ --by you --db /);
    expect(r.stdout).toContain('summary.txt: "leash: budgets, limits, approvals."');
    expect(r.stdout).toMatch(spent);
  },
);
