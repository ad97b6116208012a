import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { isPlainObject } from '../json.js';
import { isPlainText } from '../unicode.js';

// A plan's labels: who or what it runs for (`team: ml`, `user: ann`), set when it is configured, so that
// limits shared by several plans can find the plans they hold.

/**
 * A plan's labels: names to values, keys sorted, frozen. Names are lower-case identifiers, values
 * non-empty plain text.
 *
 * @example
 * await service.configureGuardrails('run-7', { toolBudget: 5, labels: { team: 'ml', user: 'ann' } });
 */
export type Labels = Readonly<Record<string, string>>;

/** Most labels a plan carries. */
export const MAX_LABELS = 16;
/** Longest label value, in UTF-16 code units (as `String.length` counts). */
export const MAX_LABEL_VALUE_LENGTH = 200;

/** A label name: a letter, then letters, digits or `_`, at most 63 characters, all lower-case. */
export const LABEL_NAME = /^[a-z][a-z0-9_]{0,62}$/;
/** What a label name must be, in error messages (`<field> must be <rule>, got <value>`). */
export const LABEL_NAME_RULE =
  'a lower-case identifier (a letter, then letters, digits or _, at most 63 characters)';
/** What a label value must be, in error messages. */
export const LABEL_VALUE_RULE = `a non-empty string of at most ${MAX_LABEL_VALUE_LENGTH} characters without control characters or lone surrogates`;

/** No labels. */
export const EMPTY_LABELS: Labels = Object.freeze({});

/** True when `name` may name a label. */
export function isLabelName(name: unknown): name is string {
  return typeof name === 'string' && LABEL_NAME.test(name);
}

function isLabelValue(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_LABEL_VALUE_LENGTH &&
    isPlainText(value)
  );
}

/**
 * Checks untrusted labels and returns them as {@link Labels}: a fresh frozen object, keys sorted so that
 * equal labels serialize alike. `undefined` is no labels.
 * @throws GuardrailValidationError naming the label: `labels.team must be a non-empty string …, got ""`
 */
export function validateLabels(value: unknown, field = 'labels'): Labels {
  if (value === undefined) return EMPTY_LABELS;
  if (!isPlainObject(value)) invalid(field, 'an object of label names to string values', value);
  const names = Object.keys(value);
  if (names.length === 0) return EMPTY_LABELS;
  if (names.length > MAX_LABELS) {
    throw new GuardrailValidationError(
      field,
      `${field} must hold at most ${MAX_LABELS} labels, got ${names.length}`,
    );
  }
  const out: Record<string, string> = {};
  for (const name of names.sort()) {
    const at = `${field}.${name}`;
    if (!isLabelName(name)) {
      throw new GuardrailValidationError(
        at,
        `${at}: a label name must be ${LABEL_NAME_RULE}, got ${describeValue(name)}`,
      );
    }
    const v = value[name];
    if (!isLabelValue(v)) invalid(at, LABEL_VALUE_RULE, v);
    out[name] = v; // a name never is __proto__: it starts with a letter
  }
  return Object.freeze(out);
}

/**
 * Reads one `name=value` of a command line (split at the first `=`, so a value may hold `=`). `field`
 * names the flag in the error (`--label`).
 * @throws GuardrailValidationError: `--label must be name=value (team=ml), got "team"`
 */
export function parseLabelArgument(text: string, field: string): [name: string, value: string] {
  const at = typeof text === 'string' ? text.indexOf('=') : -1;
  if (at < 0) invalid(field, 'name=value (team=ml)', text);
  const name = text.slice(0, at);
  const value = text.slice(at + 1);
  if (!isLabelName(name)) invalid(field, `name=value, the name ${LABEL_NAME_RULE}`, text);
  if (!isLabelValue(value)) invalid(field, `name=value, the value ${LABEL_VALUE_RULE}`, text);
  return [name, value];
}

/**
 * Labels as a person reads them on one line: `team=ml user=ann`, in name order. A value with a space
 * or a quote is shown quoted (as JSON), so where one label ends stays clear.
 */
export function labelsText(labels: Labels): string {
  return Object.keys(labels)
    .map((name) => {
      const value = labels[name] as string;
      return `${name}=${/[\s"]/.test(value) ? JSON.stringify(value) : value}`;
    })
    .join(' ');
}
