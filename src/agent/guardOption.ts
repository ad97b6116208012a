import { z } from 'zod';
import { handle, parseOptions } from '../validation.js';
import { RunGuard } from './RunGuard.js';

/** The run guard one adapter call is held to: one guard per run of the loop (one invocation). */
export interface GuardOption {
  readonly guard: RunGuard;
}

/** The option every adapter takes, for the schemas of their options. */
export const GUARD_OPTION = {
  guard: handle<RunGuard>('a RunGuard', (value) => value instanceof RunGuard),
};

const guardOnly = z.object(GUARD_OPTION);

/** The run guard of an adapter's options that hold nothing else, checked. */
export function guardOf(options: unknown): RunGuard {
  return parseOptions(guardOnly, options).guard;
}
