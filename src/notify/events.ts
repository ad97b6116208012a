// The events a notification target can be told of: what the service queues, and what a policy's
// `notify:` block may choose among.

/** The events of an approval: asked for, a vote towards its quorum, decided by people, expired. */
export const APPROVAL_EVENTS = Object.freeze([
  'approval.requested',
  'approval.voted',
  'approval.decided',
  'approval.expired',
] as const);

/** A spend cap's alert fraction reached. */
export const BUDGET_ALERT_EVENT = 'budget.alert';

/** Every event a target may ask for, and the patterns that name several: `approval.*`, `*`. */
export const NOTIFY_EVENTS = Object.freeze([
  ...APPROVAL_EVENTS,
  BUDGET_ALERT_EVENT,
  'approval.*',
  '*',
] as const);

export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** Whether a target asking for `events` wants `event`. */
export function wants(events: readonly string[], event: string): boolean {
  return events.some(
    (e) => e === event || e === '*' || (e === 'approval.*' && event.startsWith('approval.')),
  );
}
