import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { canonicalIso } from '../iso.js';
import { toMicros } from '../money.js';
import { ActorLimits, type ActorLimitsInit, type ActorLimitsJson } from './ActorLimits.js';
import { normalizeOperation } from './operation.js';
import { intField, missing, objectWithKeys } from './validate.js';
import { EMPTY_RUNTIME, parseRuntime, RUNTIME_KEYS, type Runtime, type RuntimeJson } from './runtime.js';
import { EMPTY_LABELS, validateLabels, type Labels } from './labels.js';

// What guardrails are made from, and read back from: the options in code, the wire form, checked.

/** What {@link AutonomyGuardrails.create} accepts. Every limit is optional; null or absent = unlimited. */
export interface GuardrailsInit {
  /** Steps a plan may take. Integer >= 1. */
  maxSteps?: number | null;
  /** Money the plan's tools may spend, in units (exact to one millionth). Finite number >= 0. */
  toolBudget?: number | null;
  /** Operation names that need a person's confirmation. Compared case- and width-insensitively. */
  requiredConfirmations?: readonly string[];
  /** Seconds of wall-clock time from `startTime`. Finite number > 0. */
  maxWallClockSeconds?: number | null;
  /** When the plan started, ISO-8601 with a zone; set by the executor on first execution. */
  startTime?: string | null;
  actorLimits?: ActorLimitsInit;
  /** Steps already taken. Integer >= 0. */
  stepCount?: number;
  /** Money already spent, in units. Finite number >= 0. */
  budgetSpent?: number;
  /**
   * Who or what the plan runs for (`{ team: 'ml', user: 'ann' }`): at most 16, names lower-case
   * identifiers, values up to 200 characters. Configuring a plan again replaces them.
   */
  labels?: Readonly<Record<string, string>>;
}

/** Wire form (DESIGN.md §3) of {@link AutonomyGuardrails}. */
export interface GuardrailsJson extends RuntimeJson {
  max_steps: number | null;
  tool_budget: number | null;
  required_confirmations: string[];
  max_wall_clock_seconds: number | null;
  start_time: string | null;
  actor_limits: ActorLimitsJson;
  step_count: number;
  budget_spent: number;
  /** Written only when the plan has labels, so state without them reads as DESIGN.md §3 shows. */
  labels?: Record<string, string>;
}

/** Caps applied when guardrails must stay serializable within a service's metadata limits. */
export interface ConfirmationLimits {
  maxRequiredConfirmations: number;
  maxOperationNameLength: number;
}

const CAMEL = [
  'maxSteps',
  'toolBudget',
  'requiredConfirmations',
  'maxWallClockSeconds',
  'startTime',
  'actorLimits',
  'stepCount',
  'budgetSpent',
  'labels',
] as const;
const SNAKE = [
  'max_steps',
  'tool_budget',
  'required_confirmations',
  'max_wall_clock_seconds',
  'start_time',
  'actor_limits',
  'step_count',
  'budget_spent',
  'labels',
] as const;

/** The index of `labels` in CAMEL and SNAKE: the one key the wire form may leave out. */
const LABELS = 8;

export interface State {
  maxSteps: number | null;
  budgetMicros: number | null;
  confirmations: readonly string[];
  maxWallClockSeconds: number | null;
  startTime: string | null;
  actorLimits: ActorLimits;
  stepCount: number;
  spentMicros: number;
  labels: Labels;
  runtime: Runtime;
}

/**
 * The state `init` gives, checked in full (throws GuardrailValidationError naming the path under
 * `prefix`): options in code (camelCase), or the wire form (snake_case, every key present, with the
 * runtime state) when `snakeKeys`.
 */
export function parseState(
  init: unknown,
  prefix: string,
  snakeKeys: boolean,
  limits?: ConfirmationLimits,
): State {
  const keys = snakeKeys ? [...SNAKE, ...RUNTIME_KEYS] : CAMEL;
  const o = objectWithKeys(init, prefix.replace(/\.$/, '') || 'init', keys, prefix);
  const get = (i: number): unknown => o[keys[i] as string];
  const f = (i: number): string => `${prefix}${SNAKE[i]}`;
  const optional = <T>(i: number, read: (v: unknown, field: string) => T, dflt: T): T => {
    const v = get(i);
    if (v !== undefined) return read(v, f(i));
    // The wire form always carries every key but labels: a lost `tool_budget` must not read as "no
    // budget"; labels are written only when there are some.
    return snakeKeys && i !== LABELS ? missing(f(i)) : dflt;
  };
  return {
    maxSteps: optional(0, (v, n) => intField(v, n, 1, true), null),
    budgetMicros: optional(1, (v, n) => (v === null ? null : toMicros(v, n, 'down')), null),
    confirmations: optional(2, (v, n) => confirmationList(v, n, limits), []),
    maxWallClockSeconds: optional(3, positiveSecondsOrNull, null),
    startTime: optional(4, (v, n) => (v === null ? null : canonicalIso(v, n)), null),
    actorLimits: optional(
      5,
      (v) => ActorLimits.parse(v, `${prefix}actor_limits.`, snakeKeys),
      ActorLimits.UNLIMITED,
    ),
    stepCount: optional(6, (v, n) => intField(v, n, 0, false) as number, 0),
    spentMicros: optional(7, (v, n) => toMicros(v, n, snakeKeys ? 'nearest' : 'up'), 0),
    labels: optional(LABELS, validateLabels, EMPTY_LABELS),
    runtime: snakeKeys ? parseRuntime(o, prefix) : EMPTY_RUNTIME,
  };
}

function positiveSecondsOrNull(v: unknown, field: string): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) invalid(field, 'a finite number > 0', v);
  return v;
}

function confirmationList(v: unknown, field: string, limits?: ConfirmationLimits): string[] {
  if (!Array.isArray(v)) {
    throw new GuardrailValidationError(
      field,
      `${field} must be an array of strings, got ${describeValue(v)}`,
    );
  }
  if (limits && v.length > limits.maxRequiredConfirmations) {
    throw new GuardrailValidationError(
      field,
      `${field} must hold at most ${limits.maxRequiredConfirmations} names, got ${v.length}`,
    );
  }
  const out = new Set<string>();
  // A plain loop, not forEach: forEach skips the holes of a sparse array, which would pass unchecked.
  for (let i = 0; i < v.length; i++) {
    out.add(normalizeOperation(v[i], `${field}[${i}]`, limits?.maxOperationNameLength));
  }
  return [...out];
}
