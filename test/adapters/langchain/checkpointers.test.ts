// A paused LangChain run that survives a restart: LangGraph's memory, SQLite and PostgreSQL
// checkpointers beside a leash SQLite file, the approval given by `leash approve` in another process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { createAgent, tool } from 'langchain';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { leashMiddleware } from '../../../src/adapters/langchain/index.js';
import { AutonomyGuardrailService, RunGuard, SqliteStore } from '../../../src/index.js';
import { DATABASE_URL, freshSchemaName, skipWithoutServer } from '../../store/postgres-support.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const PLAN = 'agent-run';

const skipPostgres = await skipWithoutServer('test/adapters/langchain/checkpointers.test.ts');
const schema = freshSchemaName();
const savers: { close(): Promise<void> }[] = [];

afterAll(async () => {
  for (const s of savers) await s.close().catch(() => undefined);
  if (skipPostgres) return;
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
});

/** Each kind: a function that opens the checkpointer on the same storage again, as a new process would. */
const KINDS: [string, () => () => Promise<BaseCheckpointSaver>, boolean][] = [
  [
    'MemorySaver',
    () => {
      const shared = new MemorySaver();
      return async () => shared;
    },
    false,
  ],
  [
    'SqliteSaver',
    () => {
      const file = join(mkdtempSync(join(tmpdir(), 'leash-lc-')), 'checkpoints.db');
      return async () => SqliteSaver.fromConnString(file);
    },
    false,
  ],
  [
    'PostgresSaver',
    () => async () => {
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.end();
      const saver = PostgresSaver.fromConnString(DATABASE_URL, { schema });
      await saver.setup();
      savers.push({ close: () => saver.end() });
      return saver;
    },
    skipPostgres,
  ],
];

describe.each(KINDS)('a paused run on %s', (_name, kind, skip) => {
  /** One process's agent: a leash store on the SQLite file, a new guard, the checkpointer opened again. */
  async function processOn(
    dbFile: string,
    reopen: () => Promise<BaseCheckpointSaver>,
    ran: unknown[],
    script: AIMessage[],
  ) {
    const store = new SqliteStore({ path: dbFile });
    await store.migrate();
    const service = new AutonomyGuardrailService({ store });
    if ((await service.getGuardrails(PLAN)) === null)
      await service.configureGuardrails(PLAN, { requiredConfirmations: ['write'] });
    const write = tool(
      async (args: { path: string }) => {
        ran.push(args);
        return `wrote ${args.path}`;
      },
      { name: 'write', description: 'write', schema: z.object({ path: z.string() }) },
    );
    let model = fakeModel();
    for (const m of script) model = model.respond(m);
    const agent = createAgent({
      model,
      tools: [write],
      middleware: [leashMiddleware({ guard: new RunGuard({ service, planId: PLAN }), modelId: 'free' })],
      checkpointer: await reopen(),
    });
    return { agent, store };
  }

  it.skipIf(skip)(
    'runs the call once after `leash approve` in another process and a restart, and a replay does not run it again',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'leash-lc-'));
      const dbFile = join(dir, 'leash.db');
      const reopen = kind();
      const config = { configurable: { thread_id: `thread-${schema}` } };
      const ran: unknown[] = [];

      const asks = new AIMessage({
        content: '',
        tool_calls: [{ id: 'call-1', name: 'write', args: { path: 'a' } }],
      });
      const first = await processOn(dbFile, reopen, ran, [asks]);
      const paused = await first.agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
      const approvalId = (paused.__interrupt__?.[0]?.value as { approvalId: string }).approvalId;
      await first.store.close();

      const approve = spawnSync(
        process.execPath,
        ['--import', TSX, BIN, 'approve', approvalId, '--by', 'ann', '--db', dbFile],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(approve.stderr).toBe('');
      expect(approve.status).toBe(0);

      const answers = ['done', 'done after the replay'].map((text) => new AIMessage({ content: text }));
      const second = await processOn(dbFile, reopen, ran, answers);
      const resumed = await second.agent.invoke(new Command({ resume: true }), config);
      expect(ran).toEqual([{ path: 'a' }]);
      expect((resumed.messages as BaseMessage[]).at(-1)?.content).toBe('done');

      // Back to the checkpoint where the run paused, and on from there: the grant is used.
      const history = [];
      for await (const state of second.agent.graph.getStateHistory(config)) history.push(state);
      const pausedAt = history.find((s) => s.tasks.some((t) => (t.interrupts?.length ?? 0) > 0));
      expect(pausedAt).toBeDefined();
      const replayed = await second.agent.invoke(new Command({ resume: true }), pausedAt?.config ?? config);
      expect(ran).toEqual([{ path: 'a' }]);
      const refusal = (replayed.messages as BaseMessage[]).find(
        (m) => m.getType() === 'tool' && String(m.content).includes('confirmation_grant_refused'),
      );
      expect(refusal?.content).toContain('used already');
      await second.store.close();
    },
    60_000,
  );
});
