import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { formatIso } from '../iso.js';
import type { JsonObject, JsonValue } from '../json.js';
import type { Approval, PlanChange, PlanChangeFn } from '../store/GuardrailStore.js';
import type { NotificationInput } from '../store/notifications.js';
import type { DeciderIdentity } from '../store/people.js';
import { alertDetails, type BudgetAlert } from './caps.js';
import type { ServiceCore } from './core.js';

// What the service queues in the store's outbox once a change has committed: an event per target that
// wants it, delivered later by whichever process runs a dispatcher. Queuing never fails a decision.

/** The events of an approval: asked for, a vote towards its quorum, decided by people, expired. */
export const APPROVAL_EVENTS = Object.freeze([
  'approval.requested',
  'approval.voted',
  'approval.decided',
  'approval.expired',
] as const);
export type ApprovalEvent = (typeof APPROVAL_EVENTS)[number];

/** A spend cap's alert fraction reached (what `onBudgetAlert` is told). */
export const BUDGET_ALERT_EVENT = 'budget.alert';

/** Every event a target may ask for, and the patterns that name several: `approval.*`, `*`. */
export const NOTIFY_EVENTS = Object.freeze([
  ...APPROVAL_EVENTS,
  BUDGET_ALERT_EVENT,
  'approval.*',
  '*',
] as const);
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** A place notifications go, by name, and the events it wants. */
export interface NotifyTarget {
  readonly name: string;
  readonly events: readonly string[];
}

/** The service's `notify` option. */
export interface NotifyOptions {
  readonly targets: readonly NotifyTarget[];
}

const TARGET_NAME_RULE = 'a target name of 1 to 128 characters';
const EVENT_RULE = `one of ${NOTIFY_EVENTS.join(', ')}`;

/** The `notify` option as checked: target names unique. */
export const notifyOption = z
  .strictObject(
    {
      targets: z.array(
        z.strictObject(
          {
            name: z
              .string({ error: TARGET_NAME_RULE })
              .min(1, { error: TARGET_NAME_RULE })
              .max(128, { error: TARGET_NAME_RULE }),
            events: z.array(z.enum(NOTIFY_EVENTS, { error: EVENT_RULE }), { error: 'a list of events' }),
          },
          { error: 'a target: { name, events }' },
        ),
        { error: 'a list of targets' },
      ),
    },
    { error: 'an object: { targets }' },
  )
  .refine((o) => new Set(o.targets.map((t) => t.name)).size === o.targets.length, {
    error: 'targets with different names',
  });

/** Whether a target asking for `events` wants `event`. */
export function wants(events: readonly string[], event: string): boolean {
  return events.some(
    (e) => e === event || e === '*' || (e === 'approval.*' && event.startsWith('approval.')),
  );
}

/** The names of the targets that want some event of an approval: what a new approval keeps in `notify`. */
export function approvalTargets(targets: readonly NotifyTarget[]): string[] {
  return targets.filter((t) => APPROVAL_EVENTS.some((e) => wants(t.events, e))).map((t) => t.name);
}

/** Keys whose value is undefined dropped: what JSON would drop. */
function defined(o: Record<string, JsonValue | undefined>): JsonObject {
  const out: Record<string, JsonValue> = {};
  for (const key of Object.keys(o)) if (o[key] !== undefined) out[key] = o[key];
  return out;
}

function identityPayload(d: DeciderIdentity): JsonObject {
  return defined({
    kind: d.kind,
    subject: d.subject,
    name: d.name,
    issuer: d.issuer,
    principal: d.principal,
    roles: d.roles === undefined ? undefined : [...d.roles],
  });
}

/**
 * An approval as notifications carry it (`data.approval`): its fields in snake_case, those it has. A
 * formatter (a Slack message, say) reads `id`, `plan_id`, `operation`, `tool_name`, `input_preview`,
 * `status`, `expires_at`, `requester`, `rule` (`name`, `approvers`, `quorum`, …), `votes` and `decider`.
 */
export function approvalPayload(a: Approval): JsonObject {
  const r = a.rule;
  return defined({
    id: a.id,
    plan_id: a.planId,
    decision_id: a.decisionId,
    operation: a.operation,
    tool_name: a.toolName,
    input_preview: a.inputPreview,
    input_hash: a.inputHash,
    status: a.status,
    requested_at: a.requestedAt,
    expires_at: a.expiresAt,
    requester: a.requester,
    rule:
      r === undefined
        ? undefined
        : {
            name: r.name,
            approvers: [...r.approvers],
            quorum: r.quorum,
            self_approval: r.selfApproval,
            on_timeout: r.onTimeout,
            elicitation: r.elicitation,
          },
    votes: a.votes?.map((v) => defined({ by: identityPayload(v.by), at: v.at, reason: v.reason })),
    decided_by: a.decidedBy,
    decided_at: a.decidedAt,
    decider: a.decider === undefined ? undefined : identityPayload(a.decider),
    reason: a.reason,
    used_at: a.usedAt,
  });
}

/** A spend cap's alert as notifications carry it (`data.alert`). */
export function alertPayload(alert: BudgetAlert): JsonObject {
  return { plan_id: alert.planId, ...alertDetails(alert) };
}

/** One notification: the event as Standard Webhooks has it, `{ type, timestamp, data }`, with a new id. */
function notification(target: string, event: string, at: string, data: JsonObject): NotificationInput {
  const payload = { type: event, timestamp: at, data };
  return { id: `ntf_${randomUUID()}`, target, event, payload, createdAt: at };
}

/**
 * The notifications of an approval's event: one per target it keeps in `notify` that wants the event. A
 * target this service knows is asked; one it does not (configured in another process) gets every event.
 */
export function approvalNotifications(
  known: readonly NotifyTarget[],
  event: ApprovalEvent,
  approval: Approval,
  at: string,
): NotificationInput[] {
  const data = { approval: approvalPayload(approval) };
  return (approval.notify ?? [])
    .filter((name) => {
      const target = known.find((t) => t.name === name);
      return target === undefined || wants(target.events, event);
    })
    .map((name) => notification(name, event, at, data));
}

/** The notifications of spend cap alerts: one per alert and target that wants them. */
export function alertNotifications(
  known: readonly NotifyTarget[],
  alerts: readonly BudgetAlert[],
  at: string,
): NotificationInput[] {
  const targets = known.filter((t) => wants(t.events, BUDGET_ALERT_EVENT));
  return alerts.flatMap((alert) =>
    targets.map((t) => notification(t.name, BUDGET_ALERT_EVENT, at, { alert: alertPayload(alert) })),
  );
}

/**
 * Queues what `build` makes (given the time) in the store's outbox; what either throws
 * or rejects with is dropped.
 */
export async function enqueue(
  core: ServiceCore,
  build: (at: string) => readonly NotificationInput[],
): Promise<void> {
  try {
    const items = build(formatIso(core.clock.now()));
    if (items.length > 0) await core.store.enqueueNotifications(items);
  } catch {
    // a notification never fails the decision it tells of
  }
}

const NO_EVENTS: readonly { event: ApprovalEvent; approval: Approval }[] = Object.freeze([]);

/** The approval events a change makes of the approval it read (`before`). */
export function approvalEvents(
  before: Approval | null,
  change: PlanChange<unknown>,
): readonly { event: ApprovalEvent; approval: Approval }[] {
  // Most changes (every check of a call needing nobody) touch no approval: nothing to allocate.
  if (change.newApproval === undefined && change.approval === undefined) return NO_EVENTS;
  const out: { event: ApprovalEvent; approval: Approval }[] = [];
  if (change.newApproval !== undefined)
    out.push({ event: 'approval.requested', approval: change.newApproval });
  const after = change.approval;
  if (after === undefined || before === null || before.status !== 'pending') return out;
  if (after.status === 'pending') {
    if ((after.votes?.length ?? 0) > (before.votes?.length ?? 0))
      out.push({ event: 'approval.voted', approval: after });
  } else if (after.status === 'denied' && after.decider?.kind === 'system') {
    out.push({ event: 'approval.expired', approval: after });
  } else {
    out.push({ event: 'approval.decided', approval: after });
  }
  return out;
}

/**
 * The approval events of one update, queued once it has committed. A store may run a change more than
 * once (deciding again after another writer): only the last run counts.
 */
export class ApprovalNotices {
  #events: readonly { event: ApprovalEvent; approval: Approval }[] = NO_EVENTS;

  constructor(readonly core: ServiceCore) {}

  /** `change`, noting the approval events of its last run. */
  changing<T>(change: PlanChangeFn<T>): PlanChangeFn<T> {
    return (g, approval, caps) => {
      const out = change(g, approval, caps);
      this.#events = approvalEvents(approval, out);
      return out;
    };
  }

  /** `pending`, queuing the notifications of its events once it has resolved. */
  after<T>(pending: Promise<T>): Promise<T> {
    return pending.then((result) => {
      const events = this.#events;
      // No async frame when there is nothing to queue: this runs after every guarded call.
      if (events.length === 0) return result;
      const targets = this.core.notifyTargets;
      return enqueue(this.core, (at) =>
        events.flatMap((e) => approvalNotifications(targets, e.event, e.approval, at)),
      ).then(() => result);
    });
  }
}
