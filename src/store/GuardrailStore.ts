import type { AuditEntry } from '../audit/AuditEntry.js';
import type { AuditTrail } from '../audit/AuditTrail.js';
import type { ChainedEntry, Checkpoint, MalformedEntry } from '../audit/chain.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import type { PlanMutation } from '../guardrails/mutation.js';
import type { JsonObject } from '../json.js';
import type { SpendCap } from '../guardrails/caps.js';
import type { CapRef, CapWindowState } from '../guardrails/capLedger.js';
import type { CapWindowSpan } from '../guardrails/windows.js';
import type { ApprovalRule, ApprovalVote, DeciderIdentity, PersonalToken, Principal } from './people.js';
import type {
  Notification,
  NotificationClaim,
  NotificationFilter,
  NotificationInput,
  NotificationOutcome,
} from './notifications.js';

export type { PlanMutation } from '../guardrails/mutation.js';
export type { ApprovalRule, ApprovalVote, DeciderIdentity, PersonalToken, Principal } from './people.js';
export type {
  Notification,
  NotificationClaim,
  NotificationFilter,
  NotificationInput,
  NotificationOutcome,
  NotificationStatus,
} from './notifications.js';

/** Every status an approval can be in, in the order a person meets them. */
export const APPROVAL_STATUSES = Object.freeze(['pending', 'approved', 'denied', 'used'] as const);

/** Where a request for a person's confirmation stands. */
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/**
 * A request for a person's confirmation of one decision, and, once decided, the grant or the denial. A
 * grant is single-use and bound to the plan, the decision, the normalized operation and a hash of the
 * input. Lives in the store only: approvals are never read from plan metadata, which is untrusted.
 */
export interface Approval {
  readonly id: string;
  readonly planId: string;
  readonly decisionId: string;
  /** Normalized operation name(s) needing confirmation, comma-separated. */
  readonly operation: string;
  /** The tool an agent wanted to call, when the request named one. */
  readonly toolName?: string;
  /** What it wanted to call it with, as the person asked sees it: one line, escaped, at most 200 characters. */
  readonly inputPreview?: string;
  /** SHA-256 (hex) of the decision's input as canonical JSON. */
  readonly inputHash: string;
  readonly requestedAt: string;
  readonly expiresAt: string;
  readonly status: ApprovalStatus;
  /** Who approved or denied, and why. */
  readonly decidedBy?: string;
  readonly decidedAt?: string;
  readonly reason?: string;
  readonly usedAt?: string;
  /** The names of the `notify:` targets to tell of this approval's request, decision and expiry. */
  readonly notify?: readonly string[];
  /** The principal who started the run (whose token, or the plan's `user` label), when known. */
  readonly requester?: string;
  /** The rule it was opened under; absent for an approval any one operator may decide. */
  readonly rule?: ApprovalRule;
  /** The approvals given towards the rule's quorum, oldest first. */
  readonly votes?: readonly ApprovalVote[];
  /** Who made the decision that settled it (the last approval of a quorum, the denial, or leash's timeout). */
  readonly decider?: DeciderIdentity;
}

/** The outcome of a change: what to return, what to record, what to change. */
export interface PlanChange<T> {
  readonly result: T;
  /** Recorded together with the mutation, or not at all. Only for a configured plan. */
  readonly audit?: AuditEntry;
  /**
   * Several audit entries recorded with the change, in order, after `audit` when both are given; each is
   * chained and counted for checkpoints as a single entry would be; all or nothing with the rest of the
   * change. Empty records nothing. Only for a configured plan.
   */
  readonly entries?: readonly AuditEntry[];
  /** Only for a configured plan. */
  readonly mutation?: PlanMutation;
  /** New guardrails for a configured plan (a reconfiguration), applied before `mutation`. */
  readonly replace?: AutonomyGuardrails;
  /** An approval of this plan to replace (read through `options.approvalId`), committed with the rest. */
  readonly approval?: Approval;
  /** A new approval of this plan, committed with the rest; the store refuses an id already in use. */
  readonly newApproval?: Approval;
  /**
   * New states of spend cap windows, committed with the rest. Each must be a window of the change's
   * {@link CapView} (the store refuses any other with `STORE_CONTRACT`). Only for a configured plan.
   */
  readonly caps?: readonly CapWrite[];
}

/** A stored spend cap that applies to a plan, its window at the view's time, and that window's state. */
export interface AppliedCap {
  readonly cap: SpendCap;
  readonly ref: CapRef;
  readonly span: CapWindowSpan;
  readonly state: CapWindowState;
}

/**
 * What an update with `capsAt` sees of the spend caps, read in the same atomic step as the plan: the
 * caps that apply to the plan's labels with their windows at that time, and the windows the plan's open
 * reservations hold amounts in. Holds lapsed at `at` are already let go in every state it gives.
 */
export interface CapView {
  /** The time the windows are of (epoch ms): the update's `capsAt`. */
  readonly at: number;
  /** Every stored cap that applies to the plan, in cap id order. */
  readonly applying: readonly AppliedCap[];
  /** A window's state by ref: those of `applying` and of the plan's open reservations, else undefined. */
  state(ref: CapRef): CapWindowState | undefined;
  /** A stored cap by id, whether it applies to the plan or not. */
  capOf(id: string): SpendCap | undefined;
}

/** A window's new state, written with the change. */
export interface CapWrite {
  readonly ref: CapRef;
  readonly state: CapWindowState;
}

/** A window of a cap as `listCapWindows` reads it. */
export interface CapWindowRecord extends CapRef {
  readonly state: CapWindowState;
}

/**
 * Decides a change from a plan's current guardrails (null when the plan is not configured). It must be
 * synchronous and must not modify its argument: it describes the change, the store applies it. (A store
 * may hand it the stored object itself rather than a copy, so a change that modifies it would change the
 * state without an audit entry.)
 */
export type PlanChangeFn<T> = (
  guardrails: AutonomyGuardrails | null,
  approval: Approval | null,
  caps: CapView | null,
) => PlanChange<T>;

/** The options of {@link GuardrailStore.update}. */
export interface UpdateOptions {
  /** An approval to read with the plan (if it belongs to the plan) and hand to the change. */
  readonly approvalId?: string;
  /**
   * Reads the spend caps with the plan, as of this time (epoch ms), and hands them to the change as a
   * {@link CapView}; without it the change gets null and may write no cap window.
   */
  readonly capsAt?: number;
  /**
   * Called once the change has committed, before `update` resolves, with the entries it appended to the
   * plan's durable log as chained (seq, prev, hash), in order; not called for a change that recorded
   * nothing, nor by a store that keeps no chained log (a MemoryStore with `keepLog: false`). For a
   * tracer to link a decision to its proof: what it throws is ignored, and the change stays committed.
   */
  readonly onCommit?: (entries: readonly ChainedEntry[]) => void;
}

/** A plan's state as read from a store: independent copies the caller may keep. */
export interface PlanRecord {
  readonly guardrails: AutonomyGuardrails;
  readonly audit: AuditTrail;
}

/** A plan as a runner saves it, so that another process can show or resume it. */
export interface PlanDocumentInput {
  readonly planId: string;
  /** Where the run stands, e.g. `execute`, `awaiting_confirmation`, `completed`: 1 to 64 characters. */
  readonly phase: string;
  /** The plan as JSON: its decisions, its metadata, where it came from. At most 8 MiB. */
  readonly body: JsonObject;
  /** When it was saved (ISO-8601; kept in canonical UTC form). */
  readonly updatedAt: string;
}

/** A saved plan document as read back. */
export interface PlanDocument extends PlanDocumentInput {
  /** 1 for the first save, one more for each later save. */
  readonly revision: number;
}

/** One plan a store knows: configured (guardrails stored), with a saved document, or both. */
export interface PlanListing {
  readonly planId: string;
  readonly configured: boolean;
  readonly document: { readonly phase: string; readonly updatedAt: string; readonly revision: number } | null;
}

/**
 * Where guardrail state and audit entries live. The service talks to nothing else. Every implementation
 * must pass the contract suite of `leash/testing` (`runStoreContract`).
 */
export interface GuardrailStore {
  /** How many audit entries a new plan's trail keeps. */
  readonly auditCapacity: number;

  /**
   * Reads the plan (and the approval named in `options`, if it belongs to the plan, and with `capsAt`
   * the spend caps that apply to it), decides with `change`, and commits the mutation, the approval, the
   * cap windows and the audit entries as one atomic step: concurrent updates of one plan never
   * interleave between the read and the write, nor concurrent updates of one cap window, whatever plans
   * they are of.
   */
  update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T>;

  /**
   * Installs spend caps, all or nothing: a cap whose id is stored already is replaced (its windows, and
   * what was spent in them, are kept), others are added. Caps not named stay as they are.
   */
  putCaps(caps: readonly SpendCap[]): Promise<void>;

  /** Removes a cap and its windows; true if it existed. Reservations held in them give back nothing. */
  deleteCap(id: string): Promise<boolean>;

  /** The stored caps, in id order. */
  listCaps(): Promise<SpendCap[]>;

  /** The stored windows of every cap (or of one), in cap, scope and window order. */
  listCapWindows(filter?: { readonly capId?: string }): Promise<CapWindowRecord[]>;

  /** An approval by id, or null. */
  getApproval(id: string): Promise<Approval | null>;

  /** Approvals, oldest request first, optionally of one plan and in one status. */
  listApprovals(filter?: { readonly planId?: string; readonly status?: ApprovalStatus }): Promise<Approval[]>;

  /**
   * The newest approval of `planId` asked for decision `decisionId` (by request time, then id, as
   * `listApprovals` orders them), or null. Optional: without it, callers list the plan's approvals.
   */
  findApproval?(planId: string, decisionId: string): Promise<Approval | null>;

  /**
   * Stores a plan's guardrails, creating the plan if needed. With `audit`, its newest `auditCapacity`
   * entries are appended to the plan's durable log as new chained entries and the trail `get` returns
   * starts at the first of them; nothing already in the log is removed. Without `audit`, an existing plan
   * keeps its trail and a new one starts an empty one. The trail's capacity is always the store's,
   * whatever `audit` came with.
   */
  put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void>;

  /**
   * Stores a new plan's guardrails, with an empty trail, only if the plan is not configured: true when it
   * stored them, false (changing nothing) when the plan exists. Atomic against every other write of the
   * plan, so of two callers configuring one new plan only one creates it, and the other's change can then
   * keep what was used meanwhile. Optional: without it, the service puts, which another caller's
   * configuration in between would overwrite.
   */
  create?(planId: string, guardrails: AutonomyGuardrails): Promise<boolean>;

  /** The plan's state, or null when it is not configured. */
  get(planId: string): Promise<PlanRecord | null>;

  /**
   * The plan's guardrails alone, or null when it is not configured: what `get` returns without reading
   * the audit window, for callers that check limits often. Optional: without it, callers use `get`.
   */
  getGuardrails?(planId: string): Promise<AutonomyGuardrails | null>;

  /**
   * The plan's whole durable audit log, oldest first: seq 1..n, each entry chained to the one before it
   * (see `chainEntry`). Empty for a plan that is not configured. Every store is an `AuditLogSource`.
   */
  readAuditLog(planId: string): Promise<readonly ChainedEntry[]>;

  /**
   * The log as {@link readAuditLog} reads it, for a verifier: a stored row that cannot be decoded into an
   * entry comes as a {@link MalformedEntry} instead of making the read fail with `STORE_CORRUPT`. Stores
   * that keep rows have it; one that keeps entries as objects has nothing it could not decode.
   */
  readAuditRows?(planId: string): Promise<readonly (ChainedEntry | MalformedEntry)[]>;

  /**
   * Saves a plan's document. With `expectedRevision` the write is conditional: `null` only if none is
   * saved, `n` only over revision n; otherwise it rejects with `PLAN_DOCUMENT_CONFLICT` and changes
   * nothing, so two processes cannot both claim a paused plan. Resolves with the document as saved.
   */
  savePlanDocument(
    document: PlanDocumentInput,
    options?: { readonly expectedRevision?: number | null },
  ): Promise<PlanDocument>;

  /** A plan's saved document, or null. */
  getPlanDocument(planId: string): Promise<PlanDocument | null>;

  /** Every plan the store knows (configured or with a document), in plan id order. */
  listPlans(): Promise<PlanListing[]>;

  /**
   * The checkpoints the store wrote of the plan's log, oldest first (see the stores' `checkpoints`
   * option); empty when it writes none. Export them (`exportCheckpoints`) to keep them where whoever
   * can change the database cannot: checked against them, `verifyAuditLog` finds a cut tail and a
   * rewritten, re-hashed log.
   */
  readCheckpoints(planId: string): Promise<readonly Checkpoint[]>;

  /**
   * Removes the entries of a plan's log up to and including seq `throughSeq`, for a retention setting,
   * and resolves with how many it removed. `throughSeq` must be the size of one of the store's
   * checkpoints of the plan: that checkpoint anchors what is kept, and `verifyAuditLog` then verifies the
   * log from it (reporting `prunedThrough`). Checkpoints are kept.
   */
  pruneAuditLog(planId: string, throughSeq: number): Promise<number>;

  /** Adds a principal, or replaces the one with its id. */
  putPrincipal(principal: Principal): Promise<void>;

  /** A principal by id (revoked ones too), or null. */
  getPrincipal(id: string): Promise<Principal | null>;

  /** Every principal (revoked ones too), in id order. */
  listPrincipals(): Promise<Principal[]>;

  /** Adds a personal token, or replaces the one with its id (to revoke it); its hash is unique. */
  putToken(token: PersonalToken): Promise<void>;

  /** The token whose hash is `hash`, or null. */
  findToken(hash: string): Promise<PersonalToken | null>;

  /** Tokens (revoked and expired ones too), oldest first, optionally of one principal. */
  listTokens(filter?: { readonly principalId?: string }): Promise<PersonalToken[]>;

  /**
   * Queues notifications, all or nothing, `queued`, due at once, each after the ones queued before it.
   * An id already queued is skipped (queuing is idempotent).
   */
  enqueueNotifications(items: readonly NotificationInput[]): Promise<void>;

  /**
   * Claims what is due at `now` for delivery: for each target, its oldest notification still `queued`,
   * if it is due (`nextAttemptAt` ≤ now) and not held by another claim (`leaseUntil` passed or absent).
   * Each claimed one gets `leaseUntil` = now + `leaseMs` and one more attempt, atomically, so two
   * dispatchers never claim the same one. At most `limit`, oldest first.
   */
  claimNotifications(claim: NotificationClaim): Promise<Notification[]>;

  /** Records the outcome of an attempt: delivered, to retry at a time, or failed for good. */
  finishNotification(id: string, outcome: NotificationOutcome): Promise<void>;

  /** Notifications, newest first, optionally in one status, at most `limit` (default 100). */
  listNotifications(filter?: NotificationFilter): Promise<Notification[]>;

  /** Forgets a plan, its audit log, its approvals, its checkpoints and its document; true if it existed. */
  delete(planId: string): Promise<boolean>;

  /** Releases connections and files. The store is not used afterwards. */
  close(): Promise<void>;
}
