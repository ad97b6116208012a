import { invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { RunGuard } from './RunGuard.js';

/** The run guard one adapter call is held to: one guard per run of the loop (one invocation). */
export interface GuardOption {
  readonly guard: RunGuard;
}

/** The options object, checked: its keys, and a RunGuard under `guard`. */
export function guardOptions(options: unknown, keys: readonly string[]): Record<string, unknown> {
  const o = objectWithKeys(options, 'options', ['guard', ...keys]);
  if (!(o['guard'] instanceof RunGuard)) invalid('guard', 'a RunGuard', o['guard']);
  return o;
}
