import { describe, expect, it } from 'vitest';
import { GuardrailValidationError, MemoryStore } from '../../src/index.js';
import { runStoreContract } from '../../src/store/contract.js';

runStoreContract('MemoryStore', { newStore: () => new MemoryStore({ auditCapacity: 5000 }) });

describe('MemoryStore', () => {
  it('refuses an audit capacity below 1', () => {
    expect(() => new MemoryStore({ auditCapacity: 0 })).toThrow(GuardrailValidationError);
  });
});
