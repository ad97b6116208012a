import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailValidationError,
  MemoryStore,
  PlanExecutor,
  SqliteStore,
  StoreOutcomeUnknownError,
  toolResult,
  type GuardrailStore,
  type ToolCallBegin,
} from '../../src/index.js';
import {
  decisions,
  echo,
  eventsOf,
  guardrailsOf,
  harness,
  numberIn,
  planOf,
  tool,
} from '../support/executor.js';
import { tempFiles } from '../support/tempFiles.js';

// A decision's settlement and the checks of the next one go to the store together, so that a store
// that writes the updates made at once in one transaction commits once for both.

const ONE_DECISION = [
  'wall_clock_allowed',
  'step_allowed',
  'confirmation_not_required',
  'budget_reserved',
  'budget_committed',
];

const { newFile, closeAfter } = tempFiles('leash-executor-settlement-');

async function sqliteFile(): Promise<SqliteStore> {
  const store = new SqliteStore({ path: newFile() });
  closeAfter(() => store.close());
  await store.migrate();
  return store;
}

const STORES: [string, () => Promise<GuardrailStore>][] = [
  ['MemoryStore', async () => new MemoryStore()],
  ['SqliteStore', sqliteFile],
];

/** `service` with its beginToolCall replaced by `begin`, which gets the real one. */
function withBegin(
  service: AutonomyGuardrailService,
  begin: (real: AutonomyGuardrailService['beginToolCall'], planId: string, call: ToolCallBegin) => unknown,
): AutonomyGuardrailService {
  return new Proxy(service, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      if (key === 'beginToolCall') {
        const real = target.beginToolCall.bind(target);
        return (planId: string, call: ToolCallBegin) => begin(real, planId, call);
      }
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

describe('a decision settled with the next one checked', () => {
  it('commits once per decision to a SQLite file', async () => {
    const commitsFor = async (n: number): Promise<number> => {
      const db = new Database(newFile());
      closeAfter(() => db.close());
      let commits = 0;
      const transaction = db.transaction.bind(db);
      // Every write of the store is a transaction of its own, started with BEGIN IMMEDIATE.
      db.transaction = ((fn: (...args: unknown[]) => unknown) => {
        const real = transaction(fn);
        return Object.assign((...args: unknown[]) => real(...args), {
          deferred: real.deferred,
          exclusive: real.exclusive,
          immediate: (...args: unknown[]) => (commits++, real.immediate(...args)),
        });
      }) as unknown as typeof db.transaction;
      const store = new SqliteStore({ database: db });
      closeAfter(() => store.close());
      await store.migrate();
      const { executor } = await harness([echo], { store });
      commits = 0;
      await executor.execute(planOf(decisions(n)));
      return commits;
    };

    expect((await commitsFor(3)) - (await commitsFor(1))).toBe(2);
  });

  it.each(STORES)('checks no decision after one that overran the budget, on %s', async (_name, store) => {
    const metered = tool('metered', { run: (input) => toolResult(input, { cost: numberIn(input, 'cost') }) });
    const { executor, service } = await harness([metered], {
      store: await store(),
      guardrails: { toolBudget: 1 },
    });

    await executor.execute(
      planOf([
        { id: 'd1', tool: 'metered', input: { cost: 1.5 } },
        { id: 'd2', tool: 'metered', input: { cost: 0 } },
      ]),
    );

    expect(await eventsOf(service)).toEqual([...ONE_DECISION.slice(0, -1), 'budget_overrun']);
    expect((await guardrailsOf(service)).stepCount).toBe(1);
  });

  it.each(STORES)(
    'leaves the next decision unchecked for a listener that interrupts the run, on %s',
    async (_name, store) => {
      const controller = new AbortController();
      const { executor, service } = await harness([echo], { store: await store() });
      executor.on('decision', () => controller.abort());

      const result = await executor.execute(planOf(decisions(2)), { signal: controller.signal });

      expect([result.status, await eventsOf(service), (await guardrailsOf(service)).stepCount]).toEqual([
        'failed',
        ONE_DECISION,
        1,
      ]);
    },
  );

  it('sends no checks ahead in a run that can be interrupted, so that none stays taken', async () => {
    const controller = new AbortController();
    const { service } = await harness([echo]);
    const sent: (string | undefined)[] = [];
    const watched = withBegin(service, (real, planId, call) => {
      sent.push(call.after);
      return real(planId, call);
    });
    const executor = new PlanExecutor({ service: watched, tools: [echo] });

    const result = await executor.execute(planOf(decisions(2)), { signal: controller.signal });

    expect([result.status, sent]).toEqual(['completed', [undefined, undefined]]);
  });

  it('ends the run on checks sent ahead whose answer was lost, asking for none again', async () => {
    const { service } = await harness([echo]);
    const lost = new StoreOutcomeUnknownError('the connection was lost after the update was sent');
    const losing = withBegin(service, (real, planId, call) =>
      call.after === undefined ? real(planId, call) : Promise.reject(lost),
    );
    const executor = new PlanExecutor({ service: losing, tools: [echo] });

    const result = await executor.execute(planOf(decisions(2)));

    expect([result.status, result.error, result.completed.map((c) => c.decisionId)]).toEqual([
      'failed',
      lost,
      ['d1'],
    ]);
    expect(await eventsOf(service)).toEqual(ONE_DECISION);
  });

  it('asks for the checks again when the service refuses them with the settlement', async () => {
    const { service } = await harness([echo]);
    const older = withBegin(service, (real, planId, call) =>
      call.after === undefined
        ? real(planId, call)
        : Promise.reject(new GuardrailValidationError('call.after', 'call.after is not a known field')),
    );
    const executor = new PlanExecutor({ service: older, tools: [echo] });

    const result = await executor.execute(planOf(decisions(2)));

    expect([result.status, await eventsOf(service)]).toEqual([
      'completed',
      [...ONE_DECISION, ...ONE_DECISION],
    ]);
  });
});
