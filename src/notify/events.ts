// The events a notification target can be told of: what the service queues, and what a policy's
// `notify:` block may choose among.

/** Every event a `notify:` target may ask for, in the order an approval meets them, then budgets. */
export const NOTIFY_EVENTS = Object.freeze([
  'approval.requested',
  'approval.voted',
  'approval.decided',
  'approval.expired',
  'budget.alert',
] as const);

export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** True for a name in {@link NOTIFY_EVENTS}. */
export function isNotifyEvent(name: unknown): name is NotifyEvent {
  return (NOTIFY_EVENTS as readonly unknown[]).includes(name);
}
