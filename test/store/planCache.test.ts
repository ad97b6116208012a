import { describe, expect, it } from 'vitest';
import { AuditTrail, AutonomyGuardrails } from '../../src/index.js';
import { PlanCache, type CachedPlan } from '../../src/store/planCache.js';

function plan(): CachedPlan {
  return { guardrails: AutonomyGuardrails.create(), head: null, version: '' };
}

describe('PlanCache', () => {
  it('forgets the least recently used plan beyond its capacity', () => {
    const cache = new PlanCache(2);
    cache.set('a', plan());
    cache.set('b', plan());
    cache.set('c', plan());
    expect(['a', 'b', 'c'].map((id) => cache.get(id) !== undefined)).toEqual([false, true, true]);
  });

  it('counts a read as a use', () => {
    const cache = new PlanCache(2);
    cache.set('a', plan());
    cache.set('b', plan());
    cache.get('a');
    cache.set('c', plan());
    expect(['a', 'b', 'c'].map((id) => cache.get(id) !== undefined)).toEqual([true, false, true]);
  });

  it('keeps the plan used last when it is used again and again, and forgets the one before it', () => {
    const cache = new PlanCache(2);
    cache.set('a', plan());
    cache.set('b', plan());
    cache.get('b');
    cache.set('b', plan());
    cache.set('c', plan());
    expect(['a', 'b', 'c'].map((id) => cache.get(id) !== undefined)).toEqual([false, true, true]);
  });

  it('moves a plan read after another was set to the end again', () => {
    const cache = new PlanCache(2);
    cache.set('a', plan());
    cache.get('a');
    cache.set('b', plan());
    cache.get('a');
    cache.set('c', plan());
    expect(['a', 'b', 'c'].map((id) => cache.get(id) !== undefined)).toEqual([true, false, true]);
  });

  it('keeps the plan last set under an id', () => {
    const cache = new PlanCache(2);
    const second = plan();
    cache.set('a', plan());
    cache.set('a', second);
    expect(cache.get('a')).toBe(second);
  });

  it('keeps an audit window for a cached plan only', () => {
    const cache = new PlanCache(2);
    cache.set('a', plan());
    cache.keepTrail('a', new AuditTrail());
    cache.keepTrail('b', new AuditTrail());
    expect([cache.trail('a') !== undefined, cache.trail('b')]).toEqual([true, undefined]);
  });

  it("drops a plan's audit window with the plan", () => {
    const cache = new PlanCache(1);
    cache.set('a', plan());
    cache.keepTrail('a', new AuditTrail());
    cache.set('b', plan());
    expect(cache.trail('a')).toBeUndefined();
  });

  it('keeps the audit window a plan set again still has', () => {
    const cache = new PlanCache(2);
    const trail = new AuditTrail();
    cache.set('a', plan());
    cache.keepTrail('a', trail);
    cache.set('a', plan());
    expect(cache.trail('a')).toBe(trail);
  });

  it('forgets the audit window kept longest ago beyond its capacity for windows', () => {
    const cache = new PlanCache(4, 2);
    for (const id of ['a', 'b', 'c']) {
      cache.set(id, plan());
      cache.keepTrail(id, new AuditTrail());
    }
    expect(['a', 'b', 'c'].map((id) => cache.trail(id) !== undefined)).toEqual([false, true, true]);
  });

  it('drops every audit window when cleared', () => {
    const cache = new PlanCache(2);
    cache.set('a', plan());
    cache.keepTrail('a', new AuditTrail());
    cache.clear();
    cache.set('a', plan());
    expect(cache.trail('a')).toBeUndefined();
  });
});
