import { describe, expect, it } from 'vitest';
import { AutonomyGuardrails } from '../../src/index.js';
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
});
