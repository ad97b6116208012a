import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../../src/errors.js';
import {
  alertCrossed,
  capWindowFromJson,
  capWindowToJson,
  emptyWindow,
  holdIn,
  settleIn,
  spendIn,
  sweepWindow,
  windowCovers,
  windowHasRoom,
  type CapHold,
  type CapWindowState,
} from '../../src/guardrails/capLedger.js';
import { MAX_AMOUNT, MICROS_PER_UNIT } from '../../src/money.js';

const START = Date.parse('2026-11-30T00:00:00.000Z');
const END = Date.parse('2026-12-01T00:00:00.000Z');
const NOW = Date.parse('2026-11-30T10:00:00.000Z');

/** A window of today with `spent` micro-units spent and the holds given, `[key, micros, expiresAt]`. */
function window(spent: number, holds: [string, number, number][] = [], alertedPpm = 0): CapWindowState {
  let w: CapWindowState = { ...spendIn(emptyWindow(START, END), spent), alertedPpm };
  for (const [key, micros, expiresAt] of holds) w = holdIn(w, key, micros, expiresAt);
  return w;
}

function fieldOf(call: () => unknown): string | undefined {
  try {
    call();
  } catch (e) {
    expect(e).toBeInstanceOf(GuardrailValidationError);
    return (e as GuardrailValidationError).field;
  }
  throw new Error('expected a GuardrailValidationError');
}

describe('sweepWindow', () => {
  it('drops the holds lapsed at now (expiry <= now) and keeps the later ones, with their amount', () => {
    const w = window(0, [
      ['p\nearly', 100, NOW - 1],
      ['p\nat-now', 200, NOW],
      ['p\nlater', 400, NOW + 1],
    ]);
    const swept = sweepWindow(w, NOW);
    expect([...swept.holds.keys()]).toEqual(['p\nlater']);
    expect(swept.reservedMicros).toBe(400);
  });

  it('returns the same object when no hold lapsed', () => {
    const w = window(5, [['p\nr1', 100, NOW + 1]]);
    expect(sweepWindow(w, NOW)).toBe(w);
  });
});

describe('windowCovers', () => {
  it('covers an amount that brings spent and held to exactly the limit', () => {
    const w = window(100_000, [['p\nr1', 100_000, NOW + 1]]);
    expect(windowCovers(w, 300_000, 100_000)).toBe(true);
  });

  it('does not cover one micro-unit beyond the limit', () => {
    const w = window(100_000, [['p\nr1', 100_000, NOW + 1]]);
    expect(windowCovers(w, 300_000, 100_001)).toBe(false);
  });
});

describe('windowHasRoom', () => {
  it('has no room for a hold beyond the 10,000 a window keeps', () => {
    const holds = new Map<string, CapHold>();
    for (let i = 0; i < 10_000; i++) holds.set(`p\nr${i}`, { micros: 0, expiresAt: NOW + 1 });
    expect([windowHasRoom({ ...window(0), holds }), windowHasRoom(window(0))]).toEqual([false, true]);
  });
});

describe('spendIn', () => {
  it('adds the amount to what was spent, leaving the holds alone', () => {
    const w = spendIn(window(100, [['p\nr1', 50, NOW + 1]]), 25);
    expect([w.spentMicros, w.reservedMicros]).toEqual([125, 50]);
  });

  it('returns the same object for nothing spent', () => {
    const w = window(100);
    expect(spendIn(w, 0)).toBe(w);
  });

  it('refuses to spend beyond the largest amount, naming the cap spent', () => {
    expect(fieldOf(() => spendIn(window(1), MAX_AMOUNT * MICROS_PER_UNIT))).toBe('cap spent');
  });
});

describe('holdIn', () => {
  it('holds the amount under its key until its expiry, adding it to what is reserved', () => {
    const w = holdIn(window(0, [['p\nr1', 100, NOW + 1]]), 'p\nr2', 250, NOW + 5);
    expect(w.holds.get('p\nr2')).toEqual({ micros: 250, expiresAt: NOW + 5 });
    expect(w.reservedMicros).toBe(350);
  });

  it('refuses a key already held, naming the cap hold', () => {
    const w = window(0, [['p\nr1', 100, NOW + 1]]);
    expect(fieldOf(() => holdIn(w, 'p\nr1', 1, NOW + 2))).toBe('cap hold');
  });

  it('leaves the window it was given unchanged', () => {
    const w = window(0);
    holdIn(w, 'p\nr1', 100, NOW + 1);
    expect([w.holds.size, w.reservedMicros]).toEqual([0, 0]);
  });
});

describe('settleIn', () => {
  it('gives the hold back and spends the actual cost in its place', () => {
    const w = settleIn(window(10, [['p\nr1', 100, NOW + 1]]), 'p\nr1', 70);
    expect([w.spentMicros, w.reservedMicros, w.holds.size]).toEqual([80, 0, 0]);
  });

  it('gives the hold back and spends nothing on a release (null)', () => {
    const w = settleIn(window(10, [['p\nr1', 100, NOW + 1]]), 'p\nr1', null);
    expect([w.spentMicros, w.reservedMicros, w.holds.size]).toEqual([10, 0, 0]);
  });

  it('spends only the actual cost when the window no longer holds the key', () => {
    const w = settleIn(window(10, [['p\nother', 100, NOW + 1]]), 'p\nr1', 70);
    expect([w.spentMicros, w.reservedMicros, [...w.holds.keys()]]).toEqual([80, 100, ['p\nother']]);
  });
});

describe('alertCrossed', () => {
  it('crosses a fraction when spending reaches it exactly: limit 0.3, 0.15 spent, alert at 0.5', () => {
    expect(alertCrossed([500_000], 300_000, window(150_000))).toBe(500_000);
  });

  it('does not cross a fraction one micro-unit short of it', () => {
    expect(alertCrossed([500_000], 300_000, window(149_999))).toBeNull();
  });

  it('answers the highest fraction crossed at once', () => {
    expect(alertCrossed([250_000, 500_000, 800_000], 1_000_000, window(900_000))).toBe(800_000);
  });

  it('answers only a fraction above the one already recorded', () => {
    const alerts = [500_000, 800_000];
    expect(alertCrossed(alerts, 1_000_000, window(700_000, [], 500_000))).toBeNull();
    expect(alertCrossed(alerts, 1_000_000, window(800_000, [], 500_000))).toBe(800_000);
  });

  it('counts what is spent, not what is held', () => {
    expect(alertCrossed([500_000], 1_000_000, window(0, [['p\nr1', 900_000, NOW + 1]]))).toBeNull();
  });
});

describe('cap window JSON', () => {
  it('reads back the window it wrote, through JSON text', () => {
    const w = window(
      1_234_567,
      [
        ['p\nr1', 100, NOW + 1],
        ['q\nr2', 0, NOW + 2],
      ],
      800_000,
    );
    expect(capWindowFromJson(JSON.parse(JSON.stringify(capWindowToJson(w))), 'w')).toEqual(w);
  });

  it('writes neither holds nor alerted_ppm for a window without them', () => {
    expect(capWindowToJson(emptyWindow(START, null))).toEqual({
      start_ms: START,
      end_ms: null,
      spent_micros: 0,
    });
  });

  it('names the field of a hold whose amount is malformed', () => {
    const json = {
      ...capWindowToJson(window(0)),
      holds: [
        ['p\nr1', 1, NOW],
        ['p\nr2', -1, NOW],
      ],
    };
    expect(fieldOf(() => capWindowFromJson(json, 'caps[0].state'))).toBe('caps[0].state.holds[1][1]');
  });

  it('names the field of a spent amount that is not an integer', () => {
    const json = { ...capWindowToJson(window(0)), spent_micros: 1.5 };
    expect(fieldOf(() => capWindowFromJson(json, 'w'))).toBe('w.spent_micros');
  });

  it('names the field itself for a value that is not an object', () => {
    expect(fieldOf(() => capWindowFromJson([], 'w'))).toBe('w');
  });
});
