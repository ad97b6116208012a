import { AuditEntry } from '../audit/AuditEntry.js';
import { chainEntry, type ChainedEntry, type Checkpoint } from '../audit/chain.js';
import { describeValue, GuardrailError, invalid } from '../errors.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { applyMutation } from '../guardrails/mutation.js';
import { checkpointDue, type CheckpointPolicy } from './checkpoints.js';
import { CapSession } from './caps.js';
import type { Approval, CapView, CapWrite, PlanChange, UpdateOptions } from './GuardrailStore.js';
import type { ChainHead } from './planCache.js';

// The steps every store takes for an update once its change function has answered, written once: what
// a store does itself is read the plan, and write what these steps decided.

/** What one update writes, as {@link decideWrite} decided it. */
export interface Write<C> {
  /** The guardrails to keep when the change gives new ones (a replacement, a mutation), else undefined. */
  readonly guardrails: AutonomyGuardrails | undefined;
  /** The change's audit entries, as the store records them (see `record` of {@link decideWrite}). */
  readonly entries: C;
  /** An approval of the plan to replace, and a new one to add. */
  readonly approval: Approval | undefined;
  readonly newApproval: Approval | undefined;
  /** The cap windows to write (checked against the change's view), for the store's `CapSession.keep`. */
  readonly caps: readonly CapWrite[];
}

/** What a store gives {@link decideWrite}: how it keeps entries, and how it checks approval ids. */
export interface WriteSteps<C> {
  /** Makes of the change's entries what the store keeps: chained, with their checkpoints, or as they are. */
  record(entries: readonly AuditEntry[]): C;
  /**
   * Takes the change's approvals before anything of the plan changes: a store refuses (throws) here an id
   * it holds for another plan or a new one already in use, when its write cannot, or makes and checks
   * their rows.
   */
  claim?(approval: Approval | undefined, newApproval: Approval | undefined): void;
  /** The view of the caps the change was given, or null: the windows it writes must be of it. */
  readonly capView: CapView | null;
}

/**
 * Decides what an update writes from the change its function answered (`out`) and the plan's stored
 * guardrails (null when the plan is not configured), in the order every store follows:
 * 1. a change that writes nothing writes nothing: null;
 * 2. a change of a plan that is not configured, or with an approval of another plan, is refused
 *    (`STORE_CONTRACT`), and then the store's `claim` of the approval ids;
 * 3. its cap windows are checked against the view it was given (the store keeps them once this
 *    resolves), and its audit entries checked and handed to the store's `record`;
 * 4. last, its new guardrails: a replacement is copied, and the mutation applied to it or, in place, to
 *    `stored`, all or nothing.
 * Everything that can throw does so before `stored` is changed.
 */
export function decideWrite<C>(
  planId: string,
  stored: AutonomyGuardrails | null,
  out: PlanChange<unknown>,
  steps: WriteSteps<C>,
): Write<C> | null {
  if (!writesState(out)) return null;
  if (stored === null) {
    throw new GuardrailError(
      'STORE_CONTRACT',
      `cannot record a change for unconfigured plan ${describeValue(planId)}`,
    );
  }
  const { approval, newApproval, replace, mutation } = out;
  ownApproval(planId, approval);
  ownApproval(planId, newApproval);
  steps.claim?.(approval, newApproval);
  CapSession.check(out.caps, steps.capView);
  const entries = steps.record(entriesOf(out));
  // applyMutation may change its argument in place: never the caller's replacement.
  let guardrails = replace?.clone();
  if (mutation !== undefined) guardrails = applyMutation(guardrails ?? stored, mutation);
  return { guardrails, entries, approval, newApproval, caps: out.caps ?? NO_CAPS };
}

/** Refuses an approval of another plan than the one changed. */
function ownApproval(planId: string, a: Approval | undefined): void {
  if (a !== undefined && a.planId !== planId) {
    throw new GuardrailError('STORE_CONTRACT', `approval "${a.id}" belongs to another plan`);
  }
}

/** True when a change writes anything: a store may answer one that does not without a write. */
export function writesState(out: PlanChange<unknown>): boolean {
  return (
    out.mutation !== undefined ||
    out.audit !== undefined ||
    // Anything but an empty array counts, so that entries of the wrong shape are refused, not ignored.
    (out.entries !== undefined && !(Array.isArray(out.entries) && out.entries.length === 0)) ||
    out.replace !== undefined ||
    out.approval !== undefined ||
    out.newApproval !== undefined ||
    (out.caps !== undefined && !(Array.isArray(out.caps) && out.caps.length === 0))
  );
}

const NO_ENTRIES: readonly AuditEntry[] = Object.freeze([]);
const NO_CAPS: readonly CapWrite[] = Object.freeze([]);

/**
 * The audit entries a change records, in order: its `audit`, then its `entries`. Throws, naming the
 * field, when `entries` is not an array of audit entries; a store calls it before it changes anything.
 */
export function entriesOf(out: PlanChange<unknown>): readonly AuditEntry[] {
  const { audit, entries } = out;
  if (entries === undefined) return audit === undefined ? NO_ENTRIES : [audit];
  if (!Array.isArray(entries)) invalid('entries', 'an array of audit entries', entries);
  for (let i = 0; i < entries.length; i++) {
    if (!(entries[i] instanceof AuditEntry)) invalid(`entries[${i}]`, 'an audit entry', entries[i]);
  }
  return audit === undefined ? entries.slice() : [audit, ...entries];
}

/** An entry as a durable store keeps it: chained, with the checkpoint that covers it when one is due. */
export interface ChainedRecord {
  readonly audit: AuditEntry;
  readonly chained: ChainedEntry;
  readonly checkpoint: Checkpoint | null;
}

/** `entries` chained one after the other from `head` (the plan's last entry, or null). */
export function chainEntries(
  planId: string,
  head: ChainHead | null,
  entries: readonly AuditEntry[],
  checkpoints: CheckpointPolicy | null,
): ChainedRecord[] {
  let previous = head;
  return entries.map((audit) => {
    const chained = chainEntry(planId, previous, audit);
    previous = chained;
    return { audit, chained, checkpoint: checkpointDue(checkpoints, planId, chained, audit.timestamp) };
  });
}

/**
 * Tells an update's `onCommit` (see {@link UpdateOptions}) the entries its committed change appended, as
 * chained: nothing when it has none or recorded none. What it throws is dropped: the change is committed.
 */
export function reportCommit(
  onCommit: UpdateOptions['onCommit'],
  records: readonly ChainedRecord[] | undefined,
): void {
  if (onCommit === undefined || records === undefined || records.length === 0) return;
  tellCommitted(
    onCommit,
    records.map((r) => r.chained),
  );
}

/** Calls `onCommit` with `entries`, ignoring what it throws. */
export function tellCommitted(
  onCommit: NonNullable<UpdateOptions['onCommit']>,
  entries: readonly ChainedEntry[],
): void {
  try {
    onCommit(entries);
  } catch {
    // A tracer's failure is not the update's: the change is committed, and its caller gets its result.
  }
}
