/**
 * One OS process of the PostgreSQL multi-process test: checks a plan's budget `calls` times through its
 * own PostgresStore, all at once, and reports how many checks were allowed. It says "ready" once
 * connected and starts on the parent's "go", so that every process checks at the same time.
 */
import { AutonomyGuardrailService } from '../../src/index.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';

export interface WorkerJob {
  url: string;
  schema: string;
  tablePrefix: string;
  planId: string;
  calls: number;
  /** When set, progress is reported every this many checks. */
  progressEvery?: number;
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'done'; allowed: number }
  | { type: 'progress'; checks: number }
  | { type: 'failed'; message: string };

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) throw new Error('postgres-worker must be started with an IPC channel (fork)');
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}

async function run(job: WorkerJob): Promise<void> {
  const store = new PostgresStore({ url: job.url, schema: job.schema, tablePrefix: job.tablePrefix });
  try {
    const service = new AutonomyGuardrailService({ store });
    await store.get(job.planId); // connects and checks the schema version before the start
    const go = new Promise((resolve) => process.once('message', resolve));
    await send({ type: 'ready' });
    await go;
    const every = job.progressEvery;
    // Eight lanes, as a worker with a bounded pool runs: firing every check at once would queue most
    // of them behind the pool for longer than its connection timeout. Lanes also keep transactions open
    // on the server all the time, so a kill lands inside some of them.
    let started = 0;
    let made = 0;
    let allowed = 0;
    const lane = async () => {
      while (started < job.calls) {
        started++;
        if ((await service.checkToolBudget(job.planId, 1)).allowed) allowed++;
        if (++made % (every ?? Infinity) === 0) void send({ type: 'progress', checks: made });
      }
    };
    await Promise.all(Array.from({ length: 8 }, lane));
    await send({ type: 'done', allowed });
  } finally {
    await store.close();
  }
}

run(JSON.parse(process.argv[2] ?? '{}') as WorkerJob)
  .catch(async (error: unknown) => {
    await send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    process.exitCode = 1;
  })
  .finally(() => process.disconnect());
