import { invalid } from './errors.js';

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Parses an ISO-8601 date-time with an explicit zone (`Z` or `±hh:mm`) to epoch milliseconds, or returns
 * NaN. Every field is range-checked (no 30 February), and a zone is required because a local time means
 * something different on every machine that reads it.
 */
export function parseIsoMs(text: string): number {
  const m = ISO_8601.exec(text);
  if (!m) return NaN;
  const [, y, mo, d, h, mi, s = '0', frac = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return NaN;
  // Date.UTC maps years 0-99 to 1900-1999, which gets 29 February 0000 wrong; setUTCFullYear does not.
  const lastDay = new Date(0);
  lastDay.setUTCFullYear(year, month, 0);
  const daysInMonth = lastDay.getUTCDate();
  if (day > daysInMonth) return NaN;
  let offsetMin = 0;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return NaN;
    offsetMin = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  const ms = Number(frac.padEnd(3, '0').slice(0, 3));
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, ms);
  return utc.getTime() - offsetMin * 60_000;
}

let lastMs = NaN;
let lastIso = '';

/** Formats epoch milliseconds as ISO-8601 UTC with milliseconds. */
export function formatIso(ms: number): string {
  // Entries written together share their millisecond; formatting dominates serializing a trail.
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** Validates an ISO-8601 timestamp and returns it in canonical UTC form. */
export function canonicalIso(value: unknown, field: string): string {
  const ms = typeof value === 'string' ? parseIsoMs(value) : NaN;
  // An offset can push a date past year 0000 or 9999, whose UTC form this module could not read back.
  const canonical = Number.isNaN(ms) ? '' : formatIso(ms);
  if (Number.isNaN(parseIsoMs(canonical))) {
    invalid(field, 'an ISO-8601 date-time with a time zone, like "2026-11-30T10:00:00Z"', value);
  }
  return canonical;
}

/**
 * True for epoch milliseconds whose ISO-8601 form can be read back: outside the years 0000-9999 the form
 * gets a sign and six digits, which no reader of the wire format accepts.
 */
export function isSerializableTimestamp(ms: unknown): ms is number {
  return typeof ms === 'number' && ms >= FIRST_MS && ms <= LAST_MS;
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range ISO-8601's four-digit years can write. */
const FIRST_MS = -62_167_219_200_000;
const LAST_MS = 253_402_300_799_999;
