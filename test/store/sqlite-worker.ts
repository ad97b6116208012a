/**
 * One of the processes of sqlite-processes.test.ts: opens the shared database, says it is ready, and on
 * "go" makes its checks and reports how many were allowed.
 *
 * Arguments: <database file> <plan id> <number of checks> [report progress every N checks].
 */
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';

export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly allowed: number }
  | { readonly type: 'progress'; readonly checks: number }
  | { readonly type: 'error'; readonly message: string };

/** Sends `message` to the parent; resolves once it has been handed to the channel. */
function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

async function run(path: string, planId: string, checks: number, every: number): Promise<number> {
  const store = new SqliteStore({ path });
  try {
    await store.migrate();
    const service = new AutonomyGuardrailService({ store });
    await new Promise<void>((resolve) => {
      process.once('message', () => resolve());
      void send({ type: 'ready' });
    });
    // Eight lanes, as a worker making parallel tool calls runs: the checks a process makes at once share
    // its store's transactions, which other processes' transactions come between.
    let started = 0;
    let made = 0;
    let allowed = 0;
    const lane = async () => {
      while (started < checks) {
        started++;
        if ((await service.checkToolBudget(planId, 1)).allowed) allowed++;
        if (every > 0 && ++made % every === 0) void send({ type: 'progress', checks: made });
      }
    };
    await Promise.all(Array.from({ length: 8 }, lane));
    return allowed;
  } finally {
    await store.close();
  }
}

const [path, planId, checks, every] = process.argv.slice(2);
run(path ?? '', planId ?? '', Number(checks), Number(every ?? 0)).then(
  async (allowed) => {
    await send({ type: 'done', allowed });
    process.disconnect?.();
  },
  async (error: unknown) => {
    await send({
      type: 'error',
      message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
    process.exitCode = 1;
    process.disconnect?.();
  },
);
