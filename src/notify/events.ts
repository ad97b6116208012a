// The events a notification target can be told of are the service's: it queues them.
export {
  APPROVAL_EVENTS,
  BUDGET_ALERT_EVENT,
  NOTIFY_EVENTS,
  wants,
  type NotifyEvent,
} from '../service/notifications.js';
