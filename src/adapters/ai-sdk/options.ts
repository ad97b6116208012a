import { invalid } from '../../errors.js';
import { objectWithKeys } from '../../guardrails/validate.js';
import { RunGuard } from '../../agent/RunGuard.js';

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

/**
 * A signal that aborts when either does, and a function that stops listening once the call is over.
 * (AbortSignal.any costs some 9 µs a call on Node 20 and keeps its sources' listeners until collected.)
 */
export function eitherAborts(outer: AbortSignal | undefined, inner: AbortSignal): [AbortSignal, () => void] {
  if (outer === undefined) return [inner, () => undefined];
  const both = new AbortController();
  const onOuter = (): void => both.abort(outer.reason);
  const onInner = (): void => both.abort(inner.reason);
  if (outer.aborted) onOuter();
  else if (inner.aborted) onInner();
  outer.addEventListener('abort', onOuter, { once: true });
  inner.addEventListener('abort', onInner, { once: true });
  return [
    both.signal,
    () => {
      outer.removeEventListener('abort', onOuter);
      inner.removeEventListener('abort', onInner);
    },
  ];
}
