import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { clockOption, systemClock, type Clock } from '../clock.js';
import { GuardrailValidationError } from '../errors.js';
import { isApprovalRules, type ApprovalRules } from '../identity/rules.js';
import { isPlainObject } from '../json.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import { MemoryStore } from '../store/memory/MemoryStore.js';
import type { TelemetryOptions } from '../telemetry/Telemetry.js';
import { handle, integer } from '../validation.js';
import type { BudgetAlert } from './caps.js';
import { DEFAULT_METADATA_LIMITS, metadataLimitsOption, type MetadataLimits } from './metadata.js';
import { notifyOption, type NotifyOptions } from './notifications.js';

// What a service is made with: its options, as given and as checked, and the store they name.

/** What the service is made with: see the service's documentation of each. */
export interface AutonomyGuardrailServiceOptions {
  /**
   * Where state lives. The default, a {@link MemoryStore} with `keepLog: false`, keeps each plan's newest
   * `auditCapacity` entries and nothing more, so a long-running process stays bounded; pass
   * `new MemoryStore()` for the complete log in memory, or a durable store.
   */
  store?: GuardrailStore;
  clock?: Clock;
  /** Audit entries kept per plan by the default memory store. Give it to the store when you pass one. */
  auditCapacity?: number;
  metadataLimits?: Partial<MetadataLimits>;
  /**
   * What checks of a plan with no guardrails answer. `'allow'` (the default, as the spec says): steps,
   * budget, wall clock, tool calls and retries are allowed and no confirmation is required. `'deny'`:
   * every check denies (fail closed).
   */
  unconfiguredPlans?: 'allow' | 'deny';
  /**
   * What a check answers when the store cannot be reached. `'reject'` (the default): it rejects with the
   * store's `STORE_UNAVAILABLE` error, saying why. `'deny'`: it resolves denied (a confirmation
   * required, a reservation not open), with the error's message as its reason; nothing is recorded, since
   * nothing can be. Either way nothing is allowed. Applies to the checks, `reserveBudget` and
   * `requestConfirmation`, unless the store lost the database while the change was on its way
   * ({@link StoreOutcomeUnknownError}: it may have been committed): that still rejects. `useGrant`,
   * `markStarted`, settling a reservation and deciding approvals always reject.
   */
  storeUnavailable?: 'reject' | 'deny';
  /** Makes approval ids; defaults to random UUIDs. */
  ids?: () => string;
  /**
   * How long a budget reservation holds its amount, in milliseconds (integer >= 1; default 15 minutes).
   * A reservation still open after it is given back by the plan's next budget operation, so a worker that
   * died between reserve and commit cannot hold budget forever. Its commit still spends the actual cost.
   */
  reservationTtlMs?: number;
  /**
   * Called, after the check that crossed it has committed, when spending in a spend cap's window reaches
   * one of its `alert_at` fractions: once per cap, labels and window. Its errors are ignored: an alert
   * never fails or delays a check. The audit log records each as `budget_cap_alert` all the same.
   */
  onBudgetAlert?: (alert: BudgetAlert) => void | Promise<void>;
  /**
   * Who decides approvals, per operation or tool (`policyApprovalRules(policy)` or `approvalRules()`):
   * an approval opened under a rule keeps it, and counts the decisions of the people it names towards
   * its quorum. Without rules, and while the store has no principals, one person's decision settles an
   * approval, as `by` names them.
   */
  approvalRules?: ApprovalRules;
  /**
   * Where to tell of approvals and spend cap alerts: targets by name, each with the events it wants
   * (`approval.requested`, `approval.voted`, `approval.decided`, `approval.expired`, `approval.*`,
   * `budget.alert`, `*`). Once a change has committed, the service queues the notifications in the
   * store's outbox; a dispatcher delivers them. A new approval keeps the names of
   * the targets that want its events, so that a process deciding it tells them too.
   */
  notify?: NotifyOptions;
  /**
   * OpenTelemetry: each decision an event on the active span, with its audit entry's seq and hash; the
   * span's trace and span ids in the entry's details; leash's metrics. By default leash uses the globally
   * registered providers when `@opentelemetry/api` is installed (without an SDK it is a no-op), and
   * nothing otherwise; `false` turns it off. leash never registers a provider.
   */
  telemetry?: TelemetryOptions | false;
}

/** How long a budget reservation holds its amount unless the options say otherwise. */
export const DEFAULT_RESERVATION_TTL_MS = 15 * 60 * 1000;

/** The longest a confirmation request (or a reservation) may stay open. */
export const MAX_APPROVAL_TTL_MS = 10 * 365 * 24 * 60 * 60 * 1000;

const STORE_METHODS = ['update', 'put', 'get', 'delete', 'close', 'getApproval', 'listApprovals'] as const;

/** Refuses at construction what would otherwise fail on the first check with a TypeError. */
function isStore(value: unknown): boolean {
  const s = value as Record<string, unknown> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    STORE_METHODS.every((m) => typeof s[m] === 'function') &&
    Number.isSafeInteger(s['auditCapacity']) &&
    (s['auditCapacity'] as number) >= 1
  );
}

export const serviceOptions = z.object({
  store: handle<GuardrailStore>(
    `an implementation of GuardrailStore (${STORE_METHODS.join(', ')} and auditCapacity)`,
    isStore,
  ).optional(),
  // null is an error, not the default
  clock: clockOption.default(() => systemClock),
  auditCapacity: integer(1).optional(),
  metadataLimits: metadataLimitsOption.default(() => DEFAULT_METADATA_LIMITS),
  unconfiguredPlans: z.enum(['allow', 'deny'], { error: '"allow" or "deny"' }).default('allow'),
  storeUnavailable: z.enum(['reject', 'deny'], { error: '"reject" or "deny"' }).default('reject'),
  ids: handle<() => string>('a function returning a new id', (v) => typeof v === 'function').default(
    () => randomUUID,
  ),
  onBudgetAlert: handle<(alert: BudgetAlert) => void>(
    'a function',
    (v) => typeof v === 'function',
  ).optional(),
  approvalRules: handle<ApprovalRules>(
    'rules made by approvalRules() or policyApprovalRules()',
    isApprovalRules,
  ).optional(),
  notify: notifyOption.optional(),
  telemetry: handle<TelemetryOptions | false>(
    'false or an object of tracer, meter, recordContent',
    (v) => v === false || isPlainObject(v),
  ).optional(),
  reservationTtlMs: integer(1, {
    value: MAX_APPROVAL_TTL_MS,
    rule: `at most ${MAX_APPROVAL_TTL_MS} (ten years)`,
  }).default(DEFAULT_RESERVATION_TTL_MS),
});

/** The store the options give, checked against the metadata limits, or the default memory store. */
export function storeOf(
  store: GuardrailStore | undefined,
  auditCapacity: number | undefined,
  limits: MetadataLimits,
): GuardrailStore {
  if (store !== undefined && auditCapacity !== undefined) {
    throw new GuardrailValidationError(
      'auditCapacity',
      'auditCapacity configures the default memory store; with your own store, give it to the store',
    );
  }
  const chosen =
    store ?? new MemoryStore({ keepLog: false, ...(auditCapacity === undefined ? {} : { auditCapacity }) });
  if (chosen.auditCapacity > limits.maxAuditEntries) {
    // Otherwise the service would write metadata it refuses to read back.
    throw new GuardrailValidationError(
      'auditCapacity',
      `auditCapacity must be at most metadataLimits.maxAuditEntries (${limits.maxAuditEntries}), got ${chosen.auditCapacity}`,
    );
  }
  // The largest details the service writes: an operation name twice (at most 3 UTF-8 bytes per UTF-16
  // unit) with a few words, or four numbers and a sentence (under 200 bytes). Smaller limits would make
  // the service refuse, on reading, entries it wrote itself.
  const needed = Math.max(6 * limits.maxOperationNameLength + 96, 256);
  if (limits.maxDetailsBytes < needed) {
    throw new GuardrailValidationError(
      'metadataLimits.maxDetailsBytes',
      `metadataLimits.maxDetailsBytes must be at least ${needed} to hold the service's own entries, got ${limits.maxDetailsBytes}`,
    );
  }
  return chosen;
}
