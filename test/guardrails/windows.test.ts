import { Zone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import {
  capWindowAt,
  LIFETIME_START_MS,
  type CapWindowKind,
  type CapWindowSpan,
} from '../../src/guardrails/windows.js';
import { capWindowIn } from '../../src/guardrails/zoneWindows.js';
import { thrown } from '../support/thrown.js';

const HOUR = 3_600_000;
const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The window as ISO text, for readable expectations. */
function windowAt(kind: CapWindowKind, zone: string, instant: string) {
  const w = capWindowAt(kind, zone, at(instant));
  return { key: w.key, start: iso(w.startMs), end: iso(w.endMs) };
}

const hours = (w: CapWindowSpan): number => ((w.endMs as number) - w.startMs) / HOUR;

describe('capWindowAt: daylight saving in Europe/Berlin', () => {
  it('makes the spring-forward day one window of 23 hours', () => {
    expect(windowAt('day', 'Europe/Berlin', '2026-03-29T12:00:00Z')).toEqual({
      key: 'day:2026-03-29',
      start: '2026-03-28T23:00:00.000Z',
      end: '2026-03-29T22:00:00.000Z',
    });
  });

  it('makes the fall-back day one window of 25 hours', () => {
    expect(windowAt('day', 'Europe/Berlin', '2026-10-25T12:00:00Z')).toEqual({
      key: 'day:2026-10-25',
      start: '2026-10-24T22:00:00.000Z',
      end: '2026-10-25T23:00:00.000Z',
    });
  });

  it('puts both passes of the repeated hour in the fall-back day', () => {
    const first = capWindowAt('day', 'Europe/Berlin', at('2026-10-25T00:30:00Z'));
    const second = capWindowAt('day', 'Europe/Berlin', at('2026-10-25T01:30:00Z'));
    expect([first.key, second.key]).toEqual(['day:2026-10-25', 'day:2026-10-25']);
  });

  it('counts the week holding the spring-forward day as 167 hours', () => {
    expect(hours(capWindowAt('week', 'Europe/Berlin', at('2026-03-25T12:00:00Z')))).toBe(167);
  });
});

describe('capWindowAt: midnight, month ends and year ends', () => {
  it('keeps the last millisecond before local midnight in the old day', () => {
    expect(windowAt('day', 'Europe/Berlin', '2026-03-27T22:59:59.999Z').key).toBe('day:2026-03-27');
  });

  it('starts the new day at local midnight', () => {
    expect(windowAt('day', 'Europe/Berlin', '2026-03-27T23:00:00.000Z')).toEqual({
      key: 'day:2026-03-28',
      start: '2026-03-27T23:00:00.000Z',
      end: '2026-03-28T23:00:00.000Z',
    });
  });

  it('keeps 23:30 local on 31 January in January', () => {
    expect(windowAt('month', 'Europe/Berlin', '2026-01-31T22:30:00Z')).toEqual({
      key: 'month:2026-01',
      start: '2025-12-31T23:00:00.000Z',
      end: '2026-01-31T23:00:00.000Z',
    });
  });

  it('moves from February to March at local midnight after the 28th', () => {
    const last = windowAt('month', 'Europe/Berlin', '2026-02-28T22:59:59.999Z');
    const next = windowAt('month', 'Europe/Berlin', '2026-02-28T23:00:00.000Z');
    expect([last.key, last.end, next.key, next.start]).toEqual([
      'month:2026-02',
      '2026-02-28T23:00:00.000Z',
      'month:2026-03',
      '2026-02-28T23:00:00.000Z',
    ]);
  });

  it('ends March in Berlin at local midnight in summer time', () => {
    expect(windowAt('month', 'Europe/Berlin', '2026-03-15T12:00:00Z').end).toBe('2026-03-31T22:00:00.000Z');
  });

  it('keeps the last millisecond of the year in Berlin in December', () => {
    const w = ['day', 'month'].map((k) =>
      windowAt(k as CapWindowKind, 'Europe/Berlin', '2026-12-31T22:59:59.999Z'),
    );
    expect(w.map((x) => x.key)).toEqual(['day:2026-12-31', 'month:2026-12']);
  });

  it('starts the new year in Berlin one millisecond later', () => {
    const w = ['day', 'month'].map((k) =>
      windowAt(k as CapWindowKind, 'Europe/Berlin', '2026-12-31T23:00:00.000Z'),
    );
    expect(w.map((x) => x.key)).toEqual(['day:2027-01-01', 'month:2027-01']);
  });

  it('keeps the last millisecond of the year in Los Angeles in December, though UTC is in January', () => {
    expect(windowAt('month', 'America/Los_Angeles', '2027-01-01T07:59:59.999Z')).toEqual({
      key: 'month:2026-12',
      start: '2026-12-01T08:00:00.000Z',
      end: '2027-01-01T08:00:00.000Z',
    });
  });

  it('keys a week crossing the year by its Monday, and ends it the Monday after', () => {
    // 2026-12-31 is a Thursday: its ISO week runs from Monday 2026-12-28 to Monday 2027-01-04.
    expect(windowAt('week', 'Europe/Berlin', '2026-12-31T22:59:59.999Z')).toEqual({
      key: 'week:2026-12-28',
      start: '2026-12-27T23:00:00.000Z',
      end: '2027-01-03T23:00:00.000Z',
    });
  });

  it('keeps the same week across the new year in Los Angeles', () => {
    expect(windowAt('week', 'America/Los_Angeles', '2027-01-01T08:00:00.000Z')).toEqual({
      key: 'week:2026-12-28',
      start: '2026-12-28T08:00:00.000Z',
      end: '2027-01-04T08:00:00.000Z',
    });
  });

  it('starts weeks on Monday: a Sunday is in the week of the Monday before', () => {
    expect(windowAt('week', 'Europe/Berlin', '2026-03-29T12:00:00Z').key).toBe('week:2026-03-23');
  });

  it('starts a new week on Monday at local midnight', () => {
    expect(windowAt('week', 'Europe/Berlin', '2026-03-29T22:00:00Z').key).toBe('week:2026-03-30');
  });
});

describe('capWindowAt: zones whose midnight is skipped or repeated', () => {
  it('starts a day whose midnight is skipped at its first instant (Santiago, 1:00 local)', () => {
    expect(windowAt('day', 'America/Santiago', '2026-09-06T12:00:00Z')).toEqual({
      key: 'day:2026-09-06',
      start: '2026-09-06T04:00:00.000Z',
      end: '2026-09-07T03:00:00.000Z',
    });
  });

  it('ends the day before a skipped midnight where the next day starts', () => {
    expect(windowAt('day', 'America/Santiago', '2026-09-05T12:00:00Z').end).toBe('2026-09-06T04:00:00.000Z');
  });

  it('makes a day that falls back at 24:00 one window of 25 hours (Santiago)', () => {
    expect(windowAt('day', 'America/Santiago', '2026-04-04T12:00:00Z')).toEqual({
      key: 'day:2026-04-04',
      start: '2026-04-04T03:00:00.000Z',
      end: '2026-04-05T04:00:00.000Z',
    });
  });

  it('starts a day whose midnight happens twice at the first one (Havana)', () => {
    expect(windowAt('day', 'America/Havana', '2026-11-01T04:30:00Z')).toEqual({
      key: 'day:2026-11-01',
      start: '2026-11-01T04:00:00.000Z',
      end: '2026-11-02T05:00:00.000Z',
    });
  });

  it('keeps the hour after a clock set back across midnight in the new day (St. John’s, 2010)', () => {
    // At 00:01 local on 7 November 2010 clocks went back to 23:01 on the 6th: the day had begun already.
    expect(windowAt('day', 'America/St_Johns', '2010-11-07T03:00:00Z')).toEqual({
      key: 'day:2010-11-07',
      start: '2010-11-07T02:30:00.000Z',
      end: '2010-11-08T03:30:00.000Z',
    });
  });

  it('ends the day before a skipped day where the day after starts (Apia, 30 December 2011)', () => {
    expect(windowAt('day', 'Pacific/Apia', '2011-12-29T12:00:00Z')).toEqual({
      key: 'day:2011-12-29',
      start: '2011-12-29T10:00:00.000Z',
      end: '2011-12-30T10:00:00.000Z',
    });
  });

  it('starts a day at the end of a gap that began before midnight', () => {
    // UTC until 2026-06-01T23:30Z, then UTC+1: local time jumps from 23:30 to 00:30 on 2 June.
    const jump = at('2026-06-01T23:30:00Z');
    const w = capWindowIn('day', new JumpZone(jump, 60), at('2026-06-02T12:00:00Z'));
    expect([w.key, iso(w.startMs)]).toEqual(['day:2026-06-02', '2026-06-01T23:30:00.000Z']);
  });
});

describe('capWindowAt: UTC, lifetime and bad input', () => {
  it('follows UTC dates in the UTC zone', () => {
    expect(windowAt('day', 'UTC', '2026-03-29T23:59:59.999Z')).toEqual({
      key: 'day:2026-03-29',
      start: '2026-03-29T00:00:00.000Z',
      end: '2026-03-30T00:00:00.000Z',
    });
  });

  it('keys a month as year and month', () => {
    expect(windowAt('month', 'UTC', '2026-02-10T00:00:00Z').key).toBe('month:2026-02');
  });

  it('has one lifetime window that never ends', () => {
    expect(capWindowAt('lifetime', 'Europe/Berlin', at('2026-03-29T12:00:00Z'))).toEqual({
      key: 'lifetime',
      startMs: LIFETIME_START_MS,
      endMs: null,
    });
  });

  it('starts the lifetime window at the earliest instant an audit trail writes', () => {
    expect(iso(LIFETIME_START_MS)).toBe('0000-01-01T00:00:00.000Z');
  });

  it('answers an earlier instant after a later one with the earlier window', () => {
    capWindowAt('day', 'Asia/Tokyo', at('2026-05-02T12:00:00Z'));
    expect(windowAt('day', 'Asia/Tokyo', '2026-05-01T12:00:00Z').key).toBe('day:2026-05-01');
  });

  it('answers from the window it worked out last exactly as it would afresh', () => {
    capWindowAt('week', 'Europe/Paris', at('2026-03-23T00:00:00Z'));
    const again = capWindowAt('week', 'Europe/Paris', at('2026-03-29T21:59:59.999Z'));
    // Another spelling is another luxon zone, with nothing worked out yet.
    expect(again).toEqual(capWindowAt('week', 'europe/paris', at('2026-03-29T21:59:59.999Z')));
  });

  it('returns a frozen span', () => {
    expect(Object.isFrozen(capWindowAt('day', 'UTC', 0))).toBe(true);
  });

  it('refuses an unknown time zone, naming it', () => {
    const e = thrown(() => capWindowAt('day', 'Mars/Base', 0));
    expect([e.field, e.message]).toEqual(['timezone', 'timezone must be an IANA time zone, got "Mars/Base"']);
  });

  it('refuses a bare offset as a time zone', () => {
    expect(thrown(() => capWindowAt('day', '+03:00', 0)).field).toBe('timezone');
  });

  it('refuses an unknown window kind', () => {
    const e = thrown(() => capWindowAt('year' as CapWindowKind, 'UTC', 0));
    expect(e.message).toBe('window must be day, week, month or lifetime, got "year"');
  });

  it('refuses an instant that is not a number of milliseconds in the years 0000-9999', () => {
    expect(thrown(() => capWindowAt('day', 'UTC', Number.NaN)).field).toBe('nowMs');
  });
});

describe('capWindowAt: walking a clock across the Berlin daylight-saving days hour by hour', () => {
  const walks = [
    ['spring forward', '2026-03-26T00:00:00Z', '2026-04-02T00:00:00Z'],
    ['fall back', '2026-10-22T00:00:00Z', '2026-10-29T00:00:00Z'],
  ] as const;
  const kinds: readonly CapWindowKind[] = ['day', 'week', 'month'];

  for (const [name, from, to] of walks) {
    for (const kind of kinds) {
      it(`puts each instant in exactly one ${kind} window, windows following without gap (${name})`, () => {
        const clock = new ManualClock(at(from));
        const seen = new Map<string, CapWindowSpan>();
        let previous: CapWindowSpan | null = null;
        while (clock.now() <= at(to)) {
          const w = capWindowAt(kind, 'Europe/Berlin', clock.now());
          expect(w.startMs <= clock.now() && clock.now() < (w.endMs as number)).toBe(true);
          if (previous !== null && previous.key !== w.key) {
            expect(seen.has(w.key), `${w.key} came back`).toBe(false);
            expect(w.startMs).toBe(previous.endMs);
          }
          if (previous !== null && previous.key === w.key) expect(w).toEqual(previous);
          seen.set(w.key, w);
          previous = w;
          clock.advance(HOUR);
        }
        expect(seen.size).toBeGreaterThan(kind === 'day' ? 6 : 0);
      });
    }
  }
});

/** A zone at UTC until `jumpMs`, then `minutes` ahead of it: a gap of that length in local time. */
class JumpZone extends Zone {
  constructor(
    private readonly jumpMs: number,
    private readonly minutes: number,
  ) {
    super();
  }
  override get type(): string {
    return 'jump';
  }
  override get name(): string {
    return 'Test/Jump';
  }
  override get isUniversal(): boolean {
    return false;
  }
  override get isValid(): boolean {
    return true;
  }
  override offsetName(): string {
    return 'Jump';
  }
  override formatOffset(): string {
    return '+00:00';
  }
  override offset(ts: number): number {
    return ts < this.jumpMs ? 0 : this.minutes;
  }
  override equals(other: Zone): boolean {
    return other === this;
  }
}
