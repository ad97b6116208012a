import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Expiring } from '../../src/dashboard/sessions.js';

describe('what the dashboard keeps for a while', () => {
  const kept = (max = 10) => {
    const clock = new ManualClock(0);
    return { clock, items: new Expiring<string>({ clock, ttlMs: 1000, max }) };
  };

  it('is found under a random id of 32 bytes until it expires', () => {
    const { clock, items } = kept();
    const { id, expiresAt } = items.add('a');
    expect([id, expiresAt]).toEqual([expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), 1000]);
    clock.set(999);
    expect(items.get(id)).toBe('a');
    clock.set(1000);
    expect(items.get(id)).toBeNull();
  });

  it('is read once when taken', () => {
    const { items } = kept();
    const { id } = items.add('a');
    expect([items.take(id), items.take(id)]).toEqual(['a', null]);
  });

  it('makes room by dropping the oldest once full', () => {
    const { clock, items } = kept(2);
    const first = items.add('a').id;
    clock.advance(1);
    items.add('b');
    items.add('c');
    expect([items.size, items.get(first)]).toEqual([2, null]);
  });
});
