// Calendar windows of spend caps, as callers use them: a window named by its start as a local date in the
// cap's time zone (`day:2026-03-29`), so a new window is a new key, never a reset. The work is done in
// zoneWindows.ts, whose luxon types stay out of what this module declares.
import { IANAZone } from 'luxon';
import { invalid } from '../errors.js';
import { TIME_ZONE_RULE, type CapWindowKind, type CapWindowSpan } from './windowKinds.js';
import { capWindowIn } from './zoneWindows.js';

export {
  CAP_WINDOW_RULE,
  CAP_WINDOWS,
  LIFETIME_START_MS,
  TIME_ZONE_RULE,
  type CapWindowKind,
  type CapWindowSpan,
} from './windowKinds.js';

// An IANA name starts with a letter (`Europe/Berlin`, `Etc/GMT+3`, `UTC`). Checked before the runtime is
// asked, because a newer ICU also takes offsets such as `+03:00`, which are not zones with rules.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** True for a time zone name the runtime knows (`Europe/Berlin`, `UTC`); spelling as given. */
export function isTimeZone(name: unknown): name is string {
  return typeof name === 'string' && ZONE_NAME.test(name) && IANAZone.create(name).isValid;
}

/**
 * The window of kind `kind` in `timezone` that holds the instant `nowMs`. Each instant lies in exactly
 * one window, and windows follow each other without gap or overlap: a window's `endMs` is the next one's
 * `startMs`. A 23- or 25-hour daylight-saving day is one day window; an instant at 23:30 local time on
 * the last day of a month or year is still in that month, week and year.
 *
 * @example
 * capWindowAt('day', 'Europe/Berlin', Date.parse('2026-03-29T12:00:00Z'))
 * // { key: 'day:2026-03-29', startMs: Date.parse('2026-03-28T23:00:00Z'), endMs: Date.parse('2026-03-29T22:00:00Z') }
 * @throws GuardrailValidationError for an unknown kind or time zone, or an instant outside the years
 * 0000-9999
 */
export function capWindowAt(kind: CapWindowKind, timezone: string, nowMs: number): CapWindowSpan {
  if (!isTimeZone(timezone)) invalid('timezone', TIME_ZONE_RULE, timezone);
  return capWindowIn(kind, IANAZone.create(timezone), nowMs);
}
