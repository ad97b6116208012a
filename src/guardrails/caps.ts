// Spend caps that span plans: a limit on what every plan whose labels match spends together, per
// calendar window. This module holds the definitions only (pure, validated once); the stores count the
// spend and the service decides with it.
import { z } from 'zod';
import { GuardrailValidationError, invalid, isGuardrailValidationError } from '../errors.js';
import { canonicalJson, isPlainObject, isWellFormed } from '../json.js';
import { fromMicros, toMicros } from '../money.js';
import { amount, strict, validateWith } from '../validation.js';
import { CAP_WINDOW_RULE, CAP_WINDOWS, isTimeZone, TIME_ZONE_RULE, type CapWindowKind } from './windows.js';

export { CAP_WINDOWS, type CapWindowKind };

/** A cap's `match` value that matches any value of its label, one cap per distinct value. */
export const ANY_LABEL_VALUE = '*';
/** Most labels one cap matches on. */
export const MAX_CAP_MATCH_LABELS = 16;
/** Most alert thresholds one cap has. */
export const MAX_CAP_ALERTS = 8;
/** Most caps one list (a policy's `budgets:`) holds: every check weighs each of them. */
export const MAX_SPEND_CAPS = 100;

/** A spend cap as code writes it (camelCase); {@link spendCap} checks it. */
export interface SpendCapInit {
  /** Names the cap in audit entries, alerts and `leash budgets`: `team-monthly`. */
  id: string;
  /** Labels a plan must have: a value, or `'*'` for any value (one cap per value); `{}` = every plan. */
  match: Record<string, string>;
  /** Money the matching plans may spend together in one window, exact to one millionth. */
  limit: number;
  window: CapWindowKind;
  /** The IANA time zone calendar windows follow; default `UTC`. */
  timezone?: string;
  /** Fractions of the limit at which to alert, ascending, in (0, 1]: `[0.8, 1]`. Default none. */
  alertAt?: readonly number[];
}

/** A validated spend cap: frozen, with its limit held exactly in micro-units. */
export interface SpendCap {
  readonly id: string;
  /** Label names in ascending order. */
  readonly match: Readonly<Record<string, string>>;
  readonly limitMicros: number;
  /** The limit in units (`limitMicros` / 1e6). */
  readonly limit: number;
  readonly window: CapWindowKind;
  /** As given (`Europe/Berlin`), or `UTC`. */
  readonly timezone: string;
  readonly alertAt: readonly number[];
}

/** A spend cap as a policy's `budgets:` block, `leash budgets --json` and the stores write it. */
export interface SpendCapJson {
  readonly id: string;
  readonly match: Readonly<Record<string, string>>;
  readonly limit: number;
  readonly window: CapWindowKind;
  readonly timezone?: string;
  readonly alert_at?: readonly number[];
}

// ---- rules -----------------------------------------------------------------------------------------
// Each check carries its rule as its message, so an issue reads `budgets[1].timezone must be an IANA time
// zone, got "Mars/Base"` (see validateWith).

const ID_RULE = 'a cap id: a lowercase letter or digit, then up to 63 lowercase letters, digits, _ . or -';
const ID_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
// A private copy of the label rules (names, and values of at most 200 UTF-16 code units of plain text)
// until plan labels have a module of their own to import them from.
const MAX_LABEL_VALUE_LENGTH = 200;
const LABEL_NAME_RULE = 'a lowercase letter, then up to 62 lowercase letters, digits or underscores';
const LABEL_NAME_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;
const LABEL_VALUE_RULE = `a label value (1 to ${MAX_LABEL_VALUE_LENGTH} characters without control characters) or "*"`;
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const LABEL_VALUE_PATTERN = /^[^\u0000-\u001f\u007f-\u009f]+$/;
const FRACTION_RULE = 'a fraction of the limit, > 0 and <= 1';
const UNIQUE_ID_RULE = 'an id no other cap in the list has';
const SCOPE_RULE = 'a cap scope (a JSON object of labels)';

const idSchema = z
  .string({ error: ID_RULE })
  .regex(ID_PATTERN, { error: ID_RULE })
  .describe('Names the cap in audit entries and alerts; unique among the budgets.');

const labelValue = z
  .string({ error: LABEL_VALUE_RULE })
  .min(1, { error: LABEL_VALUE_RULE })
  .max(MAX_LABEL_VALUE_LENGTH, { error: LABEL_VALUE_RULE })
  .regex(LABEL_VALUE_PATTERN, { error: LABEL_VALUE_RULE })
  .refine(isWellFormed, { error: 'a string of well-formed Unicode, without a lone surrogate' });

const matchSchema = z
  .record(z.string().regex(LABEL_NAME_PATTERN, { error: LABEL_NAME_RULE }), labelValue, {
    error: 'an object of labels',
  })
  .refine((labels) => Object.keys(labels).length <= MAX_CAP_MATCH_LABELS, {
    error: `an object of at most ${MAX_CAP_MATCH_LABELS} labels`,
  })
  .meta({
    maxProperties: MAX_CAP_MATCH_LABELS,
    description:
      'Labels a plan must have for the cap to count its spend: a value, or "*" for any value (one cap per distinct value); {} = every plan.',
  });

const limitSchema = amount().describe(
  'Money the matching plans may spend together in one window, exact to one millionth.',
);

const windowSchema = z
  .enum(CAP_WINDOWS, { error: CAP_WINDOW_RULE })
  .describe('The calendar window the limit applies to: day, week (ISO, from Monday), month, or lifetime.');

const timezoneSchema = z
  .string({ error: TIME_ZONE_RULE })
  .refine(isTimeZone, { error: TIME_ZONE_RULE })
  .meta({ description: 'The IANA time zone calendar windows follow (Europe/Berlin).', default: 'UTC' });

const fraction = z
  .number({ error: FRACTION_RULE })
  .gt(0, { error: FRACTION_RULE })
  .lte(1, { error: FRACTION_RULE });

const alertAtSchema = z
  .array(fraction, { error: 'an array of fractions of the limit' })
  .max(MAX_CAP_ALERTS, { error: `at most ${MAX_CAP_ALERTS} fractions` })
  .superRefine((fractions, ctx) => {
    for (let i = 1; i < fractions.length; i++) {
      if ((fractions[i] as number) <= (fractions[i - 1] as number)) {
        ctx.addIssue({
          code: 'custom',
          path: [i],
          input: fractions[i],
          message: 'greater than the fraction before it (ascending, without repeats)',
        });
        return;
      }
    }
  })
  .describe('Fractions of the limit at which to alert, ascending, each > 0 and <= 1: [0.8, 1.0].');

/** A spend cap as a policy's `budgets:` block writes it (see {@link SpendCapJson}). */
export const spendCapJsonSchema = strict({
  id: idSchema,
  match: matchSchema,
  limit: limitSchema,
  window: windowSchema,
  timezone: timezoneSchema.optional(),
  alert_at: alertAtSchema.optional(),
}).describe('A spend cap across plans: what every plan with matching labels may spend together.');

/** A policy's `budgets:` block: spend caps with distinct ids. */
export const spendCapsJsonSchema = z
  .array(spendCapJsonSchema, { error: 'an array of spend caps' })
  .max(MAX_SPEND_CAPS, { error: `at most ${MAX_SPEND_CAPS} spend caps` })
  .superRefine((caps, ctx) => {
    const index = uniqueIds(caps.map((cap) => cap.id));
    if (index >= 0) {
      ctx.addIssue({ code: 'custom', path: [index, 'id'], input: caps[index]?.id, message: UNIQUE_ID_RULE });
    }
  })
  .describe('Spend caps that span plans, per label and calendar window.');

const spendCapInitSchema = strict({
  id: idSchema,
  match: matchSchema,
  limit: limitSchema,
  window: windowSchema,
  timezone: timezoneSchema.optional(),
  alertAt: alertAtSchema.optional(),
});

/** The index of the first id that repeats an earlier one, or -1. */
function uniqueIds(ids: readonly string[]): number {
  const seen = new Set<string>();
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as string;
    if (seen.has(id)) return i;
    seen.add(id);
  }
  return -1;
}

// ---- building --------------------------------------------------------------------------------------

/** The caps this module built: taken back as they are. */
const BUILT = new WeakSet<SpendCap>();

/**
 * A spend cap from its code form, validated; a cap already built is returned as it is.
 *
 * @example
 * spendCap({ id: 'team-monthly', match: { team: 'ml' }, limit: 500, window: 'month', timezone: 'Europe/Berlin' })
 * @throws GuardrailValidationError naming the field: `cap.timezone must be an IANA time zone, got "Mars/Base"`
 */
export function spendCap(init: unknown, field = 'cap'): SpendCap {
  if (isSpendCap(init)) return init;
  const c = validateAt(spendCapInitSchema, init, field);
  return build(c.id, c.match, c.limit, c.window, c.timezone, c.alertAt, field);
}

/** A spend cap from its wire form (a policy's `budgets:` entry, a store's row), validated. */
export function spendCapFromJson(json: unknown, field = 'cap'): SpendCap {
  const c = validateAt(spendCapJsonSchema, json, field);
  return build(c.id, c.match, c.limit, c.window, c.timezone, c.alert_at, field);
}

/** The wire form of a cap, every key written: `{ id, match, limit, window, timezone, alert_at }`. */
export function spendCapToJson(cap: SpendCap): SpendCapJson {
  return {
    id: cap.id,
    match: { ...cap.match },
    limit: cap.limit,
    window: cap.window,
    timezone: cap.timezone,
    alert_at: [...cap.alertAt],
  };
}

/**
 * A list of caps in code form (or caps already built), validated, ids distinct.
 * @throws GuardrailValidationError naming the entry: `budgets[2].id must be an id no other cap in the list
 * has, got "team-monthly"`
 */
export function spendCaps(list: unknown, field = 'budgets'): readonly SpendCap[] {
  if (!Array.isArray(list)) invalid(field, 'an array of spend caps', list);
  if (list.length > MAX_SPEND_CAPS) invalid(field, `at most ${MAX_SPEND_CAPS} spend caps`, list);
  const caps = list.map((init, i) => spendCap(init, `${field}[${i}]`));
  const repeated = uniqueIds(caps.map((cap) => cap.id));
  if (repeated >= 0) invalid(`${field}[${repeated}].id`, UNIQUE_ID_RULE, caps[repeated]?.id);
  return Object.freeze(caps);
}

/** A list of caps in wire form (a policy's `budgets:` block), validated, ids distinct. */
export function spendCapsFromJson(json: unknown, field = 'budgets'): readonly SpendCap[] {
  const list = validateAt(spendCapsJsonSchema, json, field);
  return Object.freeze(
    list.map((c, i) => build(c.id, c.match, c.limit, c.window, c.timezone, c.alert_at, `${field}[${i}]`)),
  );
}

/** True for a cap {@link spendCap} or {@link spendCapFromJson} built. */
export function isSpendCap(value: unknown): value is SpendCap {
  return typeof value === 'object' && value !== null && BUILT.has(value as SpendCap);
}

function build(
  id: string,
  match: Readonly<Record<string, string>>,
  limit: number,
  window: CapWindowKind,
  timezone: string | undefined,
  alertAt: readonly number[] | undefined,
  field: string,
): SpendCap {
  const sorted: Record<string, string> = {};
  for (const name of Object.keys(match).sort()) sorted[name] = match[name] as string;
  // A limit finer than a micro-unit rounds down, so rounding never admits more than was written.
  const limitMicros = toMicros(limit, `${field}.limit`, 'down');
  const cap: SpendCap = Object.freeze({
    id,
    match: Object.freeze(sorted),
    limitMicros,
    limit: fromMicros(limitMicros),
    window,
    timezone: timezone ?? 'UTC',
    alertAt: Object.freeze((alertAt ?? []).map((f) => f + 0)),
  });
  BUILT.add(cap);
  return cap;
}

/**
 * Checks `value` against `schema`, naming paths below `field`: `budgets[1].timezone`. validateWith names
 * them from the value's root, so the inner name is put after `field` here.
 */
function validateAt<S extends z.ZodType>(schema: S, value: unknown, field: string): z.output<S> {
  try {
    return validateWith(schema, value, { root: field, prefix: '', at: [] }, { keyRule: 'a label name' });
  } catch (e) {
    if (!isGuardrailValidationError(e) || e.field === undefined || e.field === field) throw e;
    const inner = e.field;
    const named = inner.startsWith('[') ? `${field}${inner}` : `${field}.${inner}`;
    const message = e.message.startsWith(inner) ? named + e.message.slice(inner.length) : e.message;
    throw new GuardrailValidationError(named, message, { cause: e });
  }
}

// ---- scopes ----------------------------------------------------------------------------------------

/**
 * The scope a cap counts a plan's spend under: the canonical JSON of the labels it matches, keys sorted
 * (`{"team":"ml","user":"ann"}`; `{}` for a cap matching every plan). null when the cap does not apply:
 * a label it matches on is missing, or holds another value than the one it names (`'*'` takes any value,
 * but the label must be there).
 */
export function capScope(cap: SpendCap, labels: Readonly<Record<string, string>>): string | null {
  const scope: Record<string, string> = {};
  for (const name of Object.keys(cap.match)) {
    const value = Object.hasOwn(labels, name) ? labels[name] : undefined;
    if (typeof value !== 'string') return null;
    const wanted = cap.match[name];
    if (wanted !== ANY_LABEL_VALUE && wanted !== value) return null;
    scope[name] = value;
  }
  return canonicalJson(scope, 'labels');
}

// A value shown bare in scope text; anything else is quoted, so `a, b` cannot pass for two labels.
const BARE_VALUE = /^[^\s,="\\\p{C}]+$/u;

/**
 * A scope as people read it: `team=ml, user=ann`, or `(all plans)` for `{}`. A value holding space, a
 * comma, `=` or a quote is shown as a JSON string.
 * @throws GuardrailValidationError when `scope` is not a scope {@link capScope} gives
 */
export function scopeText(scope: string): string {
  let labels: unknown;
  try {
    labels = JSON.parse(scope);
  } catch {
    labels = undefined;
  }
  if (!isPlainObject(labels)) invalid('scope', SCOPE_RULE, scope);
  const parts: string[] = [];
  for (const name of Object.keys(labels)) {
    const value = labels[name];
    if (typeof value !== 'string') invalid('scope', SCOPE_RULE, scope);
    parts.push(`${name}=${BARE_VALUE.test(value) ? value : JSON.stringify(value)}`);
  }
  return parts.length === 0 ? '(all plans)' : parts.join(', ');
}
