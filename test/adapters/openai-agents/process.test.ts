// A paused Agents SDK run across processes: saved in a leash SQLite file, approved with `leash approve`
// in another process, resumed by a process that opened the file again.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Agent, run } from '@openai/agents';
import { expect, it } from 'vitest';
import { resumeRunState, saveRunState } from '../../../src/adapters/openai-agents/index.js';
import { AutonomyGuardrailService, RunGuard, SqliteStore } from '../../../src/index.js';
import { scripted, writes, writeTool, type Turn } from './support.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const PLAN = 'agent-run';

/** `leash …args` in a process of its own. */
function leash(...args: string[]) {
  return spawnSync(process.execPath, ['--import', TSX, BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
}

/** One process's agent: a leash store on the SQLite file, a new guard and tool, a model answering `turns`. */
async function processOn(dbFile: string, ran: unknown[], turns: Turn[]) {
  const store = new SqliteStore({ path: dbFile });
  await store.migrate();
  const service = new AutonomyGuardrailService({ store });
  if ((await service.getGuardrails(PLAN)) === null)
    await service.configureGuardrails(PLAN, { requiredConfirmations: ['write'] });
  const guard = new RunGuard({ service, planId: PLAN });
  const agent = new Agent({ name: 'writer', model: scripted(turns), tools: [writeTool(guard, ran)] });
  return { store, service, guard, agent };
}

it('runs the call once after `leash approve` in another process, resumed by a third', async () => {
  const dbFile = join(mkdtempSync(join(tmpdir(), 'leash-oa-')), 'leash.db');
  const ran: unknown[] = [];
  const first = await processOn(dbFile, ran, [writes('a')]);
  const paused = await run(first.agent, 'go');
  await saveRunState(paused.state, { guard: first.guard });
  const approvalId = (await first.service.findApproval(PLAN, 'call-a-0'))?.id as string;
  await first.store.close();

  const status = leash('status', PLAN, '--db', dbFile);
  expect(status.status).toBe(0);
  expect(status.stdout).toContain('awaiting_confirmation');
  const approve = leash('approve', approvalId, '--by', 'ann', '--reason', 'checked', '--db', dbFile);
  expect(approve.stderr).toBe('');
  expect(approve.status).toBe(0);

  const second = await processOn(dbFile, ran, [{ text: 'done' }]);
  const state = await resumeRunState(second.agent, { guard: second.guard });
  const resumed = await run(second.agent, state!);
  expect(await resumeRunState(second.agent, { guard: second.guard })).toBeNull();
  await second.store.close();

  expect(ran).toEqual(['a']);
  expect(resumed.finalOutput).toBe('done');
});
