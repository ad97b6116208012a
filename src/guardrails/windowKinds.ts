// The kinds of calendar windows a spend cap counts over, and the shape of one window: what callers see,
// with nothing of the time zone library the windows are worked out with.

/** The windows a spend cap counts over: a calendar day, an ISO week (from Monday), a month, or forever. */
export const CAP_WINDOWS = ['day', 'week', 'month', 'lifetime'] as const;

/** One of {@link CAP_WINDOWS}. */
export type CapWindowKind = (typeof CAP_WINDOWS)[number];

/** The rule a window kind must meet, for error messages. */
export const CAP_WINDOW_RULE = 'day, week, month or lifetime';

/**
 * Where the `lifetime` window starts: 0000-01-01T00:00:00.000Z, the earliest instant leash writes in an
 * audit trail, so that every instant a clock can give lies inside it (0 would leave out the years before
 * 1970, which a ManualClock can reach).
 */
export const LIFETIME_START_MS = -62_167_219_200_000;

/** One window of a cap: its key, when it starts and when the next one starts (null: never). */
export interface CapWindowSpan {
  /** `day:2026-03-29`, `week:2026-03-23` (its Monday), `month:2026-03` or `lifetime`. */
  readonly key: string;
  /** The window's first instant: local midnight, or the day's first instant when midnight is skipped. */
  readonly startMs: number;
  /** The first instant of the next window, when this one's spend no longer counts; null for lifetime. */
  readonly endMs: number | null;
}

/** The rule a time zone must meet, for error messages. */
export const TIME_ZONE_RULE = 'an IANA time zone';
