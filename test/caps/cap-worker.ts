/**
 * One OS process of the spend-cap process tests, on either engine: it configures plans of its own with
 * the team's labels, through its own store on the shared database, and then
 * - "load": on the parent's "go", makes its reservations a few at a time, commits every one allowed at
 *   its full amount, and reports what was allowed, committed and refused;
 * - "hold": reserves until a cap refuses, reports, and keeps its reservations open until it is killed.
 *
 * Argument: the job, as JSON ({@link CapJob}).
 */
import { ManualClock, type Clock } from '../../src/clock.js';
import { toMicros } from '../../src/money.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { toParent } from '../support/processes.js';
import { openStore, type StoreTarget } from './stores.js';

interface JobBase {
  readonly target: StoreTarget;
  /** The ids of the plans to configure, each with a budget of `planBudget` and these labels. */
  readonly plans: readonly string[];
  readonly planBudget: number;
  readonly labels: Readonly<Record<string, string>>;
  /** The amount of every reservation. */
  readonly amount: number;
  /** How many reservations are in flight at once. */
  readonly lanes: number;
}

export type CapJob =
  | (JobBase & {
      readonly mode: 'load';
      readonly reservations: number;
      /** Seeds how long each allowed reservation stays open before its commit. */
      readonly seed: number;
    })
  | (JobBase & {
      readonly mode: 'hold';
      /** The service's clock stands still at this time (epoch ms), so the parent knows the expiry. */
      readonly at: number;
      readonly reservationTtlMs: number;
    });

/** What was refused, by event type. */
export type Refusals = Record<string, number>;

export type CapWorkerMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'done';
      readonly allowed: number;
      readonly committedMicros: number;
      readonly refusals: Refusals;
    }
  | { readonly type: 'holding'; readonly allowed: number; readonly refusals: Refusals }
  | { readonly type: 'error'; readonly message: string };

/** A small seeded generator (mulberry32): the same seed gives a process the same run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Lets `turns` turns of the event loop go by, during which other processes' updates come in. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Runs `lanes` loops at once, each taking the next number below `count` until `stop` says so. */
async function inLanes(lanes: number, count: number, each: (k: number) => Promise<boolean>): Promise<void> {
  let started = 0;
  let stopped = false;
  const lane = async () => {
    while (!stopped && started < count) if (!(await each(started++))) stopped = true;
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

async function run(job: CapJob): Promise<void> {
  const store = await openStore(job.target);
  await store.migrate(); // done by the parent already: here it checks the schema version and connects
  const clock: Clock | undefined = job.mode === 'hold' ? new ManualClock(job.at) : undefined;
  const ttl = job.mode === 'hold' ? { reservationTtlMs: job.reservationTtlMs } : {};
  const service = new AutonomyGuardrailService({ store, ...(clock ? { clock } : {}), ...ttl });
  for (const id of job.plans) {
    await service.configureGuardrails(id, { toolBudget: job.planBudget, labels: { ...job.labels } });
  }
  const refusals: Refusals = {};
  const refused = (eventType: string) => (refusals[eventType] = (refusals[eventType] ?? 0) + 1);
  let allowed = 0;
  const reserve = (k: number) =>
    service.reserveBudget(job.plans[k % job.plans.length] ?? '', job.amount, { reservationId: `r${k}` });

  if (job.mode === 'hold') {
    // Until the first refusal: nothing is given back while the clock stands still, so none comes after.
    await inLanes(job.lanes, Number.MAX_SAFE_INTEGER, async (k) => {
      const r = await reserve(k);
      if (r.allowed) allowed++;
      else refused(r.check.eventType);
      return r.allowed;
    });
    await toParent({ type: 'holding', allowed, refusals } satisfies CapWorkerMessage);
    return; // the store stays open and the channel keeps the process alive until it is killed
  }

  const go = new Promise((resolve) => process.once('message', resolve));
  await toParent({ type: 'ready' } satisfies CapWorkerMessage);
  await go;
  const amountMicros = toMicros(job.amount, 'amount');
  const next = random(job.seed);
  let committedMicros = 0;
  await inLanes(job.lanes, job.reservations, async (k) => {
    const r = await reserve(k);
    if (!r.allowed) {
      refused(r.check.eventType);
      return true;
    }
    allowed++;
    // Held for a while, so holds of many plans and processes are open in the cap at once.
    await turns(Math.floor(next() * 4));
    const commit = await r.commit(job.amount);
    if (!commit.allowed) throw new Error(`commit of r${k} refused: ${commit.reason}`);
    committedMicros += amountMicros;
    return true;
  });
  await store.close();
  await toParent({ type: 'done', allowed, committedMicros, refusals } satisfies CapWorkerMessage);
  process.disconnect();
}

run(JSON.parse(process.argv[2] ?? '{}') as CapJob).catch(async (error: unknown) => {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  await toParent({ type: 'error', message } satisfies CapWorkerMessage).catch(() => undefined);
  process.exitCode = 1;
  process.disconnect();
});
