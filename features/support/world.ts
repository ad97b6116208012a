import { setWorldConstructor, World } from '@cucumber/cucumber';
import {
  AuditEntry,
  AuditTrail,
  AutonomyGuardrails,
  AutonomyGuardrailService,
  ManualClock,
  PlanExecutor,
  type ExecutionResult,
  type GuardCheck,
  type GuardrailsInit,
  type Plan,
} from '../../src/index.js';

/** State shared by the steps of one scenario. */
export class GuardrailsWorld extends World {
  /** Fixed so that timestamps and wall-clock checks are reproducible. */
  readonly clock = new ManualClock(Date.parse('2026-11-30T10:00:00.000Z'));
  guardrails?: AutonomyGuardrails;
  check?: GuardCheck;
  error?: unknown;
  trail?: AuditTrail;
  entry?: AuditEntry;
  service?: AutonomyGuardrailService | undefined;
  lastPlanId?: string;
  restored?: AutonomyGuardrailService;
  retryChecks: GuardCheck[] = [];
  executor?: PlanExecutor;
  executorGuardrails?: GuardrailsInit;
  plan?: Plan;
  result?: ExecutionResult;

  /** Runs `fn`, keeping the error it throws for a later Then step. */
  attempt(fn: () => unknown): void {
    try {
      fn();
    } catch (error) {
      this.error = error;
    }
  }

  async attemptAsync(fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      this.error = error;
    }
  }

  newService(): AutonomyGuardrailService {
    this.service = new AutonomyGuardrailService({ clock: this.clock });
    return this.service;
  }

  /** An ISO timestamp `seconds` before the scenario's clock. */
  secondsAgo(seconds: number): string {
    return new Date(this.clock.now() - seconds * 1000).toISOString();
  }
}

export function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`step order: no ${what} yet`);
  return value;
}

setWorldConstructor(GuardrailsWorld);
