import type { KeyObject } from 'node:crypto';
import { createCheckpoint, signCheckpoint, toPrivateKey, type Checkpoint } from '../audit/checkpoint.js';
import { GuardrailValidationError } from '../errors.js';
import { intField } from '../guardrails/validate.js';
import { DEFAULT_AUDIT_CAPACITY } from '../audit/AuditTrail.js';
import { handle, integer, strict } from '../validation.js';

/**
 * When a store writes a checkpoint of a plan's log: after every `every`-th entry (seq `every`, `2·every`, …),
 * signed with `privateKey` when one is given. The checkpoint is committed with the entry it covers.
 */
export interface CheckpointOptions {
  readonly every: number;
  /** Ed25519 private key (KeyObject or PEM). Without one, checkpoints are unsigned. */
  readonly privateKey?: KeyObject | string;
}

/** Checkpoint options, checked once when the store is made. */
export interface CheckpointPolicy {
  readonly every: number;
  readonly key: KeyObject | null;
}

/** The `checkpoints` option of a store. */
const checkpointsOption = strict({
  every: integer(1),
  // Any value: toPrivateKey says what a key must be.
  privateKey: handle<KeyObject | string>('a private key', () => true).optional(),
}).transform(({ every, privateKey }): CheckpointPolicy =>
  Object.freeze({
    every,
    key: privateKey === undefined ? null : toPrivateKey(privateKey, 'checkpoints.privateKey'),
  }),
);

/** The options every store takes: how many entries `get` returns per plan, and checkpoints. */
export const STORE_OPTIONS = {
  auditCapacity: integer(1).default(DEFAULT_AUDIT_CAPACITY),
  checkpoints: checkpointsOption.optional().transform((policy) => policy ?? null),
};

/**
 * The checkpoint due after appending entry `seq` with hash `hash`, recorded at `timestamp` (the entry's
 * own time, so the same log always gives the same checkpoints), or null when none is due.
 */
export function checkpointDue(
  policy: CheckpointPolicy | null,
  planId: string,
  entry: { readonly seq: number; readonly hash: string },
  timestamp: number,
): Checkpoint | null {
  if (policy === null || entry.seq % policy.every !== 0) return null;
  const cp = createCheckpoint(planId, entry, timestamp);
  return policy.key === null ? cp : signCheckpoint(cp, policy.key);
}

/** Checks the `throughSeq` of a prune. */
export function pruneTarget(throughSeq: unknown): number {
  return intField(throughSeq, 'throughSeq', 1, false) as number;
}

/** The refusal of a prune through a seq that no checkpoint of the plan covers. */
export function unanchoredPrune(planId: string, throughSeq: number): GuardrailValidationError {
  return new GuardrailValidationError(
    'throughSeq',
    `throughSeq must be the size of a checkpoint of plan "${planId}" (which anchors the kept log), got ${throughSeq}`,
  );
}
