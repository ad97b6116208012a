import { z } from 'zod';
import type { Timers } from '../agent/deadline.js';
import type { Sleep } from '../agent/retries.js';
import { RUN_OPTIONS } from '../agent/runGuardOptions.js';
import type { Clock } from '../clock.js';
import { GuardrailViolationError, invalid } from '../errors.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { toMicros } from '../money.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { Approval } from '../store/GuardrailStore.js';
import { type CompletedDecision } from './state.js';
import { type Tool, type ToolRule } from './tools.js';
import { handle, parseOptions } from '../validation.js';

// What a plan executor is made with, and what its runs report.

export type ExecutionStatus = 'completed' | 'failed' | 'awaiting_confirmation';

/** How a run ended. Work done before the end is in `completed`, whatever the status. */
export interface ExecutionResult {
  readonly status: ExecutionStatus;
  readonly completed: readonly CompletedDecision[];
  /** The guard that ended the run, when one did. */
  readonly violation?: GuardrailViolationError;
  /** The confirmation a person must give before `resume`, when the run is waiting for one. */
  readonly approval?: Approval;
  /**
   * The error that ended the run, when a tool failed for good (at once, or the same failure again once
   * its retries were used up) or the store could not be reached.
   */
  readonly error?: unknown;
  /** The decision the run ended at after its tool failed, with the tool's last error. */
  readonly failure?: DecisionFailure;
}

/** A decision whose tool failed, and how: what a person needs to see of why a run ended. */
export interface DecisionFailure {
  readonly decisionId: string;
  /** Tries made, the failed ones included. */
  readonly attempts: number;
  /** The tool's last error, as text: its last 20 lines, at most 4 KiB (see `errorTail`). */
  readonly error: string;
}

/** What the executor reports while it runs; see {@link PlanExecutor.on}. */
export interface ExecutorEvents {
  /** A decision's tool is about to run (again, when `attempt` > 1), its checks passed. */
  started: { readonly planId: string; readonly decisionId: string; readonly attempt: number };
  /**
   * A decision ran to completion, and is settled; the next one is not checked yet. (Without a listener,
   * its settlement and the next decision's checks go to the store together: one write for both.)
   */
  decision: { readonly planId: string; readonly decision: CompletedDecision };
  /** A guard ended the run. */
  violation: {
    readonly planId: string;
    readonly decisionId: string | null;
    readonly violation: GuardrailViolationError;
  };
  /** The run stopped to wait for a person. */
  awaiting_confirmation: { readonly planId: string; readonly approval: Approval };
  /** The run ended, whatever its status. */
  completed: { readonly planId: string; readonly result: ExecutionResult };
}

/** Options of one run: {@link PlanExecutor.execute} and {@link PlanExecutor.resume}. */
export interface RunOptions {
  /** Interrupts the run when it aborts (Ctrl-C, a shutdown): it ends as failed, its work kept. */
  readonly signal?: AbortSignal;
}

export interface PlanExecutorOptions {
  /** Guardrails to enforce; without one the plan runs unguarded (no checks, no retries). */
  service?: AutonomyGuardrailService | null;
  tools?: readonly Tool[];
  /** Per-tool rules by tool name, e.g. `toolRules(policy)`. */
  toolRules?: ReadonlyMap<string, ToolRule>;
  /** How long a confirmation request stays valid. Default 24 hours. */
  approvalTtlMs?: number;
  /**
   * Waits between retries; defaults to a real timer. Inject one in tests. `signal` aborts when the run
   * is interrupted: the run stops waiting then, and a sleep should end and let go of its timer.
   */
  sleep?: Sleep;
  /**
   * Exponential backoff between retries of one failure: base * factor^n, at most maxMs. `maxRetries`
   * (default 3) caps retries per failure when the guardrails set no `max_retries_per_failure`.
   */
  retry?: { baseMs?: number; factor?: number; maxMs?: number; maxRetries?: number };
  timers?: Timers;
  /** Only to validate that callers pass one clock everywhere; the service's clock decides. */
  clock?: Clock;
}

const isTool = (value: unknown): boolean => {
  const t = value as Tool | null;
  return typeof t === 'object' && t !== null && typeof t.name === 'string' && typeof t.run === 'function';
};

/** The tools by name, each named once, with valid operations and costs. */
function toolsByName(list: readonly Tool[]): ReadonlyMap<string, Tool> {
  const tools = new Map<string, Tool>();
  list.forEach((t, i) => {
    if (tools.has(t.name)) invalid(`tools[${i}].name`, 'unique', t.name);
    if (t.operation !== undefined) normalizeOperation(t.operation, `tools[${i}].operation`);
    if (typeof t.cost === 'number') toMicros(t.cost, `tools[${i}].cost`, 'up');
    tools.set(t.name, t);
  });
  return tools;
}

const executorOptions = z.object({
  service: handle<AutonomyGuardrailService>(
    'an AutonomyGuardrailService',
    (v) => typeof (v as AutonomyGuardrailService | null)?.takeStep === 'function',
  )
    .nullable()
    .default(null),
  tools: z
    .array(handle<Tool>('a tool with a name and a run function', isTool), { error: 'an array of tools' })
    .default(() => [])
    .transform(toolsByName),
  toolRules: handle<ReadonlyMap<string, ToolRule>>('a Map of tool rules', (v) => v instanceof Map).default(
    () => new Map(),
  ),
  ...RUN_OPTIONS,
});

/** A plan executor's options, checked, with their defaults: what {@link executorSettings} returns. */
export type ExecutorSettings = z.output<typeof executorOptions>;

/** Checks a plan executor's options: its tools (named once each, with valid operations and costs) and the rest. */
export function executorSettings(options: PlanExecutorOptions): ExecutorSettings {
  return parseOptions(executorOptions, options);
}

/** A run's result, frozen with its list of completed decisions. */
export function freezeResult(result: ExecutionResult): ExecutionResult {
  return Object.freeze({ ...result, completed: Object.freeze([...result.completed]) });
}
