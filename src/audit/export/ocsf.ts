import { isGuardrailEventType, type GuardrailEventType } from '../../events.js';
import { parseIsoMs } from '../../iso.js';
import { isPlainObject } from '../../json.js';
import type { ChainedEntry } from '../chain.js';
import { entryLine } from './bundle.js';

// Audit entries as OCSF events, for a SIEM: each one an API Activity event (class 6003) of OCSF 1.3.0.

/** The OCSF schema version the events follow. */
export const OCSF_VERSION = '1.3.0';

/** OCSF API Activity's activity ids: 1 Create, 3 Update, 4 Delete, 99 Other. */
export type OcsfActivityId = 1 | 3 | 4 | 99;

const ACTIVITY_NAMES: Readonly<Record<OcsfActivityId, string>> = {
  1: 'Create',
  3: 'Update',
  4: 'Delete',
  99: 'Other',
};

/**
 * Each event type's OCSF activity: a request opened or a reservation set aside is a Create, a decision on a
 * request or a reservation settled an Update, a reservation given back a Delete; a guard's check changes
 * nothing and is Other, with the event type as its `activity_name`.
 */
export const OCSF_ACTIVITY: Readonly<Record<GuardrailEventType, OcsfActivityId>> = Object.freeze({
  confirmation_required: 1,
  budget_reserved: 1,
  confirmation_approved: 3,
  confirmation_denied: 3,
  confirmation_vote: 3,
  confirmation_vote_refused: 3,
  confirmation_expired: 3,
  confirmation_grant_used: 3,
  confirmation_grant_refused: 3,
  budget_committed: 3,
  budget_released: 4,
  step_allowed: 99,
  step_blocked: 99,
  budget_allowed: 99,
  budget_blocked: 99,
  budget_overrun: 99,
  budget_cap_blocked: 99,
  budget_cap_alert: 99,
  confirmation_not_required: 99,
  wall_clock_allowed: 99,
  wall_clock_blocked: 99,
  actor_tool_calls_allowed: 99,
  actor_tool_calls_blocked: 99,
  retry_allowed: 99,
  retry_blocked: 99,
  tool_calls_allowed: 99,
  tool_calls_blocked: 99,
});

/** An OCSF 1.3.0 API Activity event, as {@link ocsfEvent} writes it. */
export interface OcsfApiActivity {
  readonly class_uid: 6003;
  readonly class_name: 'API Activity';
  readonly category_uid: 6;
  readonly category_name: 'Application Activity';
  readonly activity_id: OcsfActivityId;
  readonly activity_name: string;
  /** class_uid * 100 + activity_id. */
  readonly type_uid: number;
  readonly type_name: string;
  /** When the entry was recorded, epoch ms. */
  readonly time: number;
  /** 1 Informational (allowed), 2 Low (a spend alert), 3 Medium (denied), 4 High (a budget overrun). */
  readonly severity_id: 1 | 2 | 3 | 4;
  readonly severity: string;
  /** 1 Success for an allowed entry, 2 Failure for a denied one. */
  readonly status_id: 1 | 2;
  readonly status: 'Success' | 'Failure';
  /** A denial's reason, when the entry gives one. */
  readonly status_detail?: string;
  readonly message: string;
  /** leash, and the person who decided when the entry names one. */
  readonly actor: {
    readonly app_name: 'leash';
    readonly user?: { readonly uid?: string; readonly name: string };
  };
  readonly api: { readonly operation: string; readonly service: { readonly name: string } };
  /** Required by the class: leash, the service that recorded the entry (it records no host). */
  readonly src_endpoint: { readonly svc_name: 'leash' };
  readonly resources: readonly { readonly type: string; readonly uid: string }[];
  readonly metadata: {
    readonly version: typeof OCSF_VERSION;
    readonly product: { readonly name: 'leash'; readonly vendor_name: 'leash'; readonly version: string };
    /** The entry's hash. */
    readonly uid: string;
    /** The plan id. */
    readonly correlation_uid: string;
    readonly log_name: 'leash audit';
    /** The entry's seq. */
    readonly sequence: number;
    /** The entry's timestamp as recorded. */
    readonly original_time: string;
  };
  /** The entry as entries.jsonl holds it: plan, seq, prev, hash and the five entry fields. */
  readonly unmapped: Readonly<Record<string, unknown>>;
}

/**
 * An audit entry of plan `planId` as an OCSF 1.3.0 API Activity event (class_uid 6003): its activity (see
 * {@link OCSF_ACTIVITY}), time, severity, status, actor (the person who decided, from the entry's
 * `details.identity`, or the name typed in `details.by`), the event type as `api.operation`, the entry's
 * hash as `metadata.uid` and the plan id as `metadata.correlation_uid`; the whole entry is in `unmapped`,
 * so it can still be hashed and checked.
 * @example for (const e of await store.readAuditLog(planId)) send(ocsfEvent(planId, e, { leashVersion }));
 */
export function ocsfEvent(
  planId: string,
  e: ChainedEntry,
  options: { leashVersion: string },
): OcsfApiActivity {
  const { event_type: eventType, guard_name: guardName, result, timestamp, details } = e.entry;
  const activityId: OcsfActivityId = isGuardrailEventType(eventType) ? OCSF_ACTIVITY[eventType] : 99;
  const activityName = activityId === 99 ? eventType : ACTIVITY_NAMES[activityId];
  const denied = result === 'denied';
  const severityId =
    eventType === 'budget_overrun' ? 4 : denied ? 3 : eventType === 'budget_cap_alert' ? 2 : 1;
  const reason = denied && typeof details['reason'] === 'string' ? details['reason'] : undefined;
  const user = userOf(details);
  const approval = details['approval_id'];
  return {
    class_uid: 6003,
    class_name: 'API Activity',
    category_uid: 6,
    category_name: 'Application Activity',
    activity_id: activityId,
    activity_name: activityName,
    type_uid: 6003 * 100 + activityId,
    type_name: `API Activity: ${ACTIVITY_NAMES[activityId]}`,
    time: parseIsoMs(timestamp),
    severity_id: severityId,
    severity: SEVERITIES[severityId],
    status_id: denied ? 2 : 1,
    status: denied ? 'Failure' : 'Success',
    ...(reason === undefined ? {} : { status_detail: reason }),
    message: `${eventType} (${guardName}): ${result}${reason === undefined ? '' : `: ${reason}`}`,
    actor: { app_name: 'leash', ...(user === undefined ? {} : { user }) },
    api: { operation: eventType, service: { name: guardName } },
    src_endpoint: { svc_name: 'leash' },
    resources: [
      { type: 'leash plan', uid: planId },
      ...(typeof approval === 'string' ? [{ type: 'leash approval', uid: approval }] : []),
    ],
    metadata: {
      version: OCSF_VERSION,
      product: { name: 'leash', vendor_name: 'leash', version: options.leashVersion },
      uid: e.hash,
      correlation_uid: planId,
      log_name: 'leash audit',
      sequence: e.seq,
      original_time: timestamp,
    },
    unmapped: entryLine(planId, e),
  };
}

const SEVERITIES: Readonly<Record<1 | 2 | 3 | 4, string>> = {
  1: 'Informational',
  2: 'Low',
  3: 'Medium',
  4: 'High',
};

/**
 * The person an entry names: the identity a decision was proved with (`details.identity`: its principal,
 * else its subject, as uid), else the name typed with `--by` (`details.by`), which proves nothing.
 */
function userOf(details: Readonly<Record<string, unknown>>): { uid?: string; name: string } | undefined {
  const identity = details['identity'];
  if (isPlainObject(identity) && typeof identity['name'] === 'string') {
    const uid = identity['principal'] ?? identity['subject'];
    return typeof uid === 'string' ? { uid, name: identity['name'] } : { name: identity['name'] };
  }
  const by = details['by'];
  return typeof by === 'string' && by !== '' ? { name: by } : undefined;
}
