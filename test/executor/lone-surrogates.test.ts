import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyAuditLog, type GuardrailStore } from '../../src/index.js';
import { detailsOf, guardrailsOf, harness, planOf, tool } from '../support/executor.js';
import { LOCAL_STORES } from '../support/service.js';

// A tool's error is foreign text: it may hold half of a UTF-16 pair, which has no UTF-8 form and which
// an audit entry refuses. The run must still end with the tool's own error, and the log stay readable.
const MESSAGE = 'boom \ud800';
const KEPT = 'boom \ufffd';

describe.each(LOCAL_STORES)('a tool whose error holds a lone surrogate, on %s', (_name, newStore) => {
  let store: GuardrailStore;
  beforeEach(async () => {
    store = await newStore();
  });
  afterEach(() => store.close());

  /** Runs one decision of a tool that costs 0.25 and throws `error`, with no retry allowed. */
  async function run(error: Error) {
    const failing = tool('failing', {
      cost: 0.25,
      run: () => {
        throw error;
      },
    });
    const guardrails = { toolBudget: 1, actorLimits: { maxRetriesPerFailure: 0 } };
    const h = await harness([failing], { store, guardrails });
    const result = await h.executor.execute(planOf([{ id: 'd1', tool: 'failing' }]));
    return { ...h, result };
  }

  it('ends the run with the tool’s error', async () => {
    const error = new TypeError(MESSAGE);
    const { result } = await run(error);
    expect([result.status, result.error]).toEqual(['failed', error]);
  });

  it('reports the failure with U+FFFD for the lone half', async () => {
    const { result } = await run(new TypeError(MESSAGE));
    expect(result.failure).toEqual({ decisionId: 'd1', attempts: 1, error: KEPT });
  });

  it('gives the failed try’s reservation back', async () => {
    const { service } = await run(new TypeError(MESSAGE));
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it('audits the release and the refused retry with U+FFFD for the lone half', async () => {
    const { service } = await run(new TypeError(MESSAGE));
    const errors = [
      ...(await detailsOf(service, 'budget_released')),
      ...(await detailsOf(service, 'retry_blocked')),
    ].map((d) => d['error']);
    expect(errors).toEqual([KEPT, KEPT]);
  });

  it('keeps a log that reads back and verifies', async () => {
    await run(new TypeError(MESSAGE));
    expect((await verifyAuditLog(store, 'plan')).ok).toBe(true);
  });
});
