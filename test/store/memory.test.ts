import { describe, expect, it } from 'vitest';
import { AutonomyGuardrails, AutonomyGuardrailService, MemoryStore } from '../../src/index.js';
import { stepEntry } from '../support/service.js';
import { runStoreContract } from '../../src/testing/index.js';
import { vitestFunctions } from '../support/testFunctions.js';

runStoreContract('MemoryStore', {
  test: vitestFunctions,
  newStore: (o) => new MemoryStore({ auditCapacity: 5000, ...o }),
});

describe('MemoryStore', () => {
  it('refuses an audit capacity below 1, naming the option', () => {
    expect(() => new MemoryStore({ auditCapacity: 0 })).toThrow(
      expect.objectContaining({ name: 'GuardrailValidationError', field: 'auditCapacity' }),
    );
  });

  it('refuses an unknown option, naming it', () => {
    expect(() => new MemoryStore({ keeplog: false } as never)).toThrow(
      expect.objectContaining({ field: 'options.keeplog' }),
    );
  });
});

describe('MemoryStore that keeps no durable log', () => {
  it('keeps the window of the newest entries', async () => {
    const store = new MemoryStore({ auditCapacity: 2, keepLog: false });
    const service = new AutonomyGuardrailService({ store });
    await service.configureGuardrails('p', { maxSteps: 10 });
    for (let i = 0; i < 3; i++) await service.takeStep('p');
    expect((await service.getAuditTrail('p'))?.entries.map((e) => e.details['step'])).toEqual([1, 2]);
  });

  it('refuses to hand out a log it does not keep', async () => {
    const store = new MemoryStore({ keepLog: false });
    await expect(store.readAuditLog('p')).rejects.toMatchObject({ code: 'STORE_NO_LOG' });
  });

  it('never calls onCommit: it keeps no chained log to report from', async () => {
    const store = new MemoryStore({ keepLog: false });
    await store.put('p', AutonomyGuardrails.create({ maxSteps: 10 }));
    let calls = 0;
    await store.update('p', () => ({ result: null, audit: stepEntry(1) }), { onCommit: () => calls++ });
    expect([calls, (await store.get('p'))?.audit.size]).toEqual([0, 1]);
  });

  it('refuses a keepLog that is not a boolean, naming it', () => {
    expect(() => new MemoryStore({ keepLog: 'no' as never })).toThrow(/keepLog/);
  });
});
