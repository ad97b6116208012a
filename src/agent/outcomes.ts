import type { GuardCheck } from '../GuardCheck.js';
import type { Approval } from '../store/GuardrailStore.js';
import { type ModelCallHandle } from './modelCalls.js';

// What a guarded call comes to: done, or denied as a value.

/** A guard said no: the check that refused, and the approval a person must decide, when one is pending. */
export interface Denied {
  readonly allowed: false;
  readonly check: GuardCheck;
  readonly reason: string;
  readonly approval?: Approval;
}

/** The call ran: its output and what it cost; `overrun` when its actual cost went past the budget. */
export interface ToolCallDone<T> {
  readonly allowed: true;
  readonly output: T;
  readonly cost: number;
  readonly overrun?: GuardCheck;
}

export type ToolCallOutcome<T> = ToolCallDone<T> | Denied;

/** A model call opened for its caller to settle, and a signal that aborts when the wall clock runs out. */
export interface OpenedModelCall {
  readonly allowed: true;
  readonly handle: ModelCallHandle;
  /**
   * Aborts (with the wall-clock violation) when the plan's wall clock runs out while the call is open;
   * the call is then charged its estimate, as a stream cancelled before its finish.
   */
  readonly signal: AbortSignal;
}

/**
 * An opened model call as handed out: frozen, its signal made only when asked for. A class, not a literal
 * with a getter: V8 gives every such literal a map of its own.
 */
export class OpenedCall implements OpenedModelCall {
  readonly allowed = true as const;
  readonly #abort: { readonly signal: AbortSignal };

  constructor(
    readonly handle: ModelCallHandle,
    abort: { readonly signal: AbortSignal },
  ) {
    this.#abort = abort;
    Object.freeze(this);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }
}

/** A denial as a value. */
export function denied(check: GuardCheck, approval?: Approval | null): Denied {
  const out = { allowed: false as const, check, reason: check.reason };
  return Object.freeze(approval ? { ...out, approval } : out);
}
