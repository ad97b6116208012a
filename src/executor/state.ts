import { invalid, isGuardrailValidationError } from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { isPlainObject } from '../json.js';
import { toMicros } from '../money.js';

/** The key under which the executor keeps its progress in a plan's metadata. */
export const EXECUTION_KEY = 'leash_execution';

/** A decision that ran to completion. */
export interface CompletedDecision {
  readonly decisionId: string;
  readonly output: unknown;
  /** What it cost: the actual cost the tool reported, or the estimate reserved for it. */
  readonly cost: number;
  /** Tries it took: 1 when it succeeded at once. */
  readonly attempts: number;
}

/**
 * Where a paused plan stopped: the decision awaiting a person and the approval asked for. Nothing here
 * grants anything: on resume the approval is looked up in the store, where a forged id finds nothing.
 */
export interface Paused {
  readonly decisionId: string;
  readonly approvalId: string;
}

/** The executor's progress, saved in `plan.metadata[EXECUTION_KEY]` so a paused plan can resume. */
export interface ExecutionState {
  /** Index of the next decision to run: decisions run in order, so also the number completed. */
  readonly next: number;
  readonly completed: readonly CompletedDecision[];
  readonly paused: Paused | null;
}

export const INITIAL_STATE: ExecutionState = Object.freeze({ next: 0, completed: [], paused: null });

/** The wire form (snake_case, like the rest of the metadata). */
export function stateToJson(s: ExecutionState): Record<string, unknown> {
  return {
    version: 1,
    next: s.next,
    completed: s.completed.map((c) => ({
      decision_id: c.decisionId,
      output: c.output,
      cost: c.cost,
      attempts: c.attempts,
    })),
    paused: s.paused === null ? null : { decision_id: s.paused.decisionId, approval_id: s.paused.approvalId },
  };
}

/**
 * The decisions a run completed so far, from the executor's progress in `metadata`; null when that
 * cannot be read, rather than a guess.
 */
export function completedDecisions(
  metadata: Record<string, unknown>,
  decisionCount: number,
): readonly CompletedDecision[] | null {
  try {
    return stateFromMetadata(metadata, decisionCount).completed;
  } catch (error) {
    if (isGuardrailValidationError(error)) return null;
    throw error;
  }
}

/**
 * Reads the executor's progress from plan metadata. The metadata is the caller's, so it is checked like
 * any input; it carries no grant of anything (approvals live in the store), only where to continue.
 */
export function stateFromMetadata(metadata: Record<string, unknown>, decisionCount: number): ExecutionState {
  const raw = metadata[EXECUTION_KEY];
  if (raw === undefined) return INITIAL_STATE;
  const path = `plan.metadata.${EXECUTION_KEY}`;
  const o = objectWithKeys(raw, path, ['version', 'next', 'completed', 'paused']);
  if (o['version'] !== 1) invalid(`${path}.version`, '1', o['version']);
  const next = intField(o['next'], `${path}.next`, 0, false) as number;
  if (next > decisionCount)
    invalid(`${path}.next`, `at most the number of decisions (${decisionCount})`, next);
  const rawCompleted = o['completed'];
  if (!Array.isArray(rawCompleted)) invalid(`${path}.completed`, 'an array', rawCompleted);
  const completed = rawCompleted.map((c: unknown, i): CompletedDecision => {
    const at = `${path}.completed[${i}]`;
    const e = objectWithKeys(c ?? null, at, ['decision_id', 'output', 'cost', 'attempts']);
    toMicros(e['cost'], `${at}.cost`);
    return Object.freeze({
      decisionId: validRuntimeKey(e['decision_id'], `${at}.decision_id`),
      output: e['output'],
      cost: e['cost'] as number,
      attempts: intField(e['attempts'], `${at}.attempts`, 1, false) as number,
    });
  });
  let paused: Paused | null = null;
  if (o['paused'] !== null) {
    const at = `${path}.paused`;
    if (!isPlainObject(o['paused'])) invalid(at, 'an object or null', o['paused']);
    const p = objectWithKeys(o['paused'], at, ['decision_id', 'approval_id']);
    paused = Object.freeze({
      decisionId: validRuntimeKey(p['decision_id'], `${at}.decision_id`),
      approvalId: validRuntimeKey(p['approval_id'], `${at}.approval_id`),
    });
  }
  if (completed.length !== next) {
    invalid(`${path}.next`, `the number of completed decisions (${completed.length})`, next);
  }
  return Object.freeze({ next, completed: Object.freeze(completed), paused });
}
