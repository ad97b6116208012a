import { generateKeyPairSync } from 'node:crypto';
import { AuditEntry } from '../../src/audit/AuditEntry.js';
import { chainEntry, type ChainedEntry } from '../../src/audit/chain.js';

export const T0 = Date.parse('2026-11-30T10:00:00.000Z');
export const PLAN = 'plan-1';
export const keys = generateKeyPairSync('ed25519');
export const otherKeys = generateKeyPairSync('ed25519');

/** The i-th entry of a test log: a step check, denied every seventh. */
export function entry(i: number): AuditEntry {
  return AuditEntry.create({
    eventType: i % 7 === 0 ? 'step_blocked' : 'step_allowed',
    guardName: 'step_limit',
    timestamp: T0 + i,
    details: { step: i, limit: 100 },
  });
}

/** Appends `count` entries after `log` (which is not changed). */
export function extend(log: readonly ChainedEntry[], count: number, planId = PLAN): ChainedEntry[] {
  const out = [...log];
  for (let i = 0; i < count; i++)
    out.push(chainEntry(planId, out[out.length - 1] ?? null, entry(out.length + 1)));
  return out;
}

/** A chained log of `n` entries. */
export function chain(n: number, planId = PLAN): ChainedEntry[] {
  return extend([], n, planId);
}
