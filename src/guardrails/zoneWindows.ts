// Calendar windows of spend caps. A window is named by its start as a local date in the cap's time zone
// (`day:2026-03-29`), so a new window is a new key and never a reset of an old one. Time zone rules come
// from luxon (the runtime's IANA data): this module does no offset arithmetic of its own, it only compares
// local dates and, where luxon's answer for a local midnight is not the day's first instant, searches.
import { DateTime, type Zone } from 'luxon';
import { invalid } from '../errors.js';
import { isSerializableTimestamp } from '../iso.js';
import {
  CAP_WINDOW_RULE,
  CAP_WINDOWS,
  LIFETIME_START_MS,
  type CapWindowKind,
  type CapWindowSpan,
} from './windowKinds.js';

/**
 * {@link capWindowAt} in any luxon zone: an IANA zone, or a fixed offset (`FixedOffsetZone.instance(60)`).
 */
export function capWindowIn(kind: CapWindowKind, zone: Zone, nowMs: number): CapWindowSpan {
  if (!(CAP_WINDOWS as readonly unknown[]).includes(kind)) invalid('window', CAP_WINDOW_RULE, kind);
  if (!isSerializableTimestamp(nowMs)) {
    invalid('nowMs', 'epoch milliseconds within the years 0000-9999', nowMs);
  }
  if (kind === 'lifetime') return LIFETIME;
  const cached = lastWindows.get(zone)?.[kind];
  if (cached !== undefined && cached.startMs <= nowMs && nowMs < (cached.endMs as number)) return cached;
  let date = firstDate(kind, localDate(nowMs, zone));
  let startMs = firstInstant(date, zone);
  // Where the clock was set back across midnight, an instant can read as a date whose window has already
  // ended, or (with luxon's guess refined) one whose window has not begun: step until the instant fits.
  while (startMs > nowMs) {
    date = step(kind, date, -1);
    startMs = firstInstant(date, zone);
  }
  let endMs = firstInstant(step(kind, date, 1), zone);
  while (endMs <= nowMs) {
    date = step(kind, date, 1);
    startMs = endMs;
    endMs = firstInstant(step(kind, date, 1), zone);
  }
  const span = Object.freeze({ key: `${kind}:${dateText(kind, date)}`, startMs, endMs });
  const last = lastWindows.get(zone) ?? {};
  last[kind] = span;
  lastWindows.set(zone, last);
  return span;
}

const LIFETIME: CapWindowSpan = Object.freeze({ key: 'lifetime', startMs: LIFETIME_START_MS, endMs: null });

/**
 * The window last worked out per zone and kind. Windows do not overlap, so an instant inside it is in
 * that window: most checks of a cap answer from here, without asking the zone's rules (tens of
 * microseconds of Intl formatting each time). luxon keeps one IANAZone per name, so the key is stable.
 */
const lastWindows = new WeakMap<Zone, { [K in CalendarKind]?: CapWindowSpan }>();

// ---- calendar dates --------------------------------------------------------------------------------
// A calendar date is a luxon DateTime at midnight UTC: UTC has no daylight saving, so adding days, weeks
// and months to it is pure calendar arithmetic.

type CalendarKind = Exclude<CapWindowKind, 'lifetime'>;

/** The local calendar date of an instant in `zone`. */
function localDate(ms: number, zone: Zone): DateTime {
  const local = DateTime.fromMillis(ms, { zone });
  return DateTime.utc(local.year, local.month, local.day);
}

/** The first date of the window of kind `kind` that holds `date`. */
function firstDate(kind: CalendarKind, date: DateTime): DateTime {
  switch (kind) {
    case 'day':
      return date;
    case 'week':
      // luxon's weekday is ISO's: Monday 1 … Sunday 7.
      return date.minus({ days: date.weekday - 1 });
    case 'month':
      return date.startOf('month');
  }
}

function step(kind: CalendarKind, date: DateTime, by: 1 | -1): DateTime {
  switch (kind) {
    case 'day':
      return date.plus({ days: by });
    case 'week':
      return date.plus({ weeks: by });
    case 'month':
      return date.plus({ months: by });
  }
}

/** `2026-03-29`, or `2026-03` for a month; four-digit years, `-0001` for the year before year 0. */
function dateText(kind: CalendarKind, date: DateTime): string {
  const year = `${date.year < 0 ? '-' : ''}${String(Math.abs(date.year)).padStart(4, '0')}`;
  const month = String(date.month).padStart(2, '0');
  if (kind === 'month') return `${year}-${month}`;
  return `${year}-${month}-${String(date.day).padStart(2, '0')}`;
}

// ---- the first instant of a date -------------------------------------------------------------------

const TWO_DAYS_MS = 2 * 86_400_000;

/** True when the instant `ms` reads, in `zone`, as `date` or a later date. */
function onOrAfter(ms: number, date: DateTime, zone: Zone): boolean {
  return localDate(ms, zone).toMillis() >= date.toMillis();
}

/**
 * The first instant that reads as `date` or later in `zone`: local midnight; the earlier one when
 * midnight happens twice (luxon picks the later); the end of the gap when midnight is skipped (so a day
 * skipped whole starts where the next one does and holds no instant).
 */
function firstInstant(date: DateTime, zone: Zone): number {
  const midnight = DateTime.fromObject({ year: date.year, month: date.month, day: date.day }, { zone });
  const guess = Math.min(...midnight.getPossibleOffsets().map((d) => d.toMillis()));
  if (onOrAfter(guess, date, zone) && !onOrAfter(guess - 1, date, zone)) return guess;
  // luxon moves a skipped local time forward by the gap's length, which overshoots when the gap started
  // before midnight. Search for the boundary: at most 28 steps over the four days around the guess.
  let before = guess - TWO_DAYS_MS;
  let after = guess + TWO_DAYS_MS;
  if (onOrAfter(before, date, zone) || !onOrAfter(after, date, zone)) return guess;
  while (after - before > 1) {
    const mid = Math.floor((before + after) / 2);
    if (onOrAfter(mid, date, zone)) after = mid;
    else before = mid;
  }
  return after;
}
