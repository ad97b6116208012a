import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';

const STARTED: Promise<void> = Promise.resolve();

/**
 * A run guard's mark of its plan's start: the start time set on first use, so the wall clock runs from
 * the agent's first call, and asked for once while it is known to be set.
 */
export class PlanStart {
  #marking: Promise<void> | null = null;
  /** True once the plan's start time is known to be set: calls then do not wait for it. */
  #known = false;

  constructor(
    private readonly service: AutonomyGuardrailService,
    private readonly planId: string,
  ) {}

  /** Whether the start is known to be set. */
  get known(): boolean {
    return this.#known;
  }

  /** Marks the plan started; resolves at once once that is known. */
  mark(): Promise<void> {
    if (this.#known) return STARTED;
    if (this.#marking === null) {
      const marking = this.service.markStarted(this.planId);
      // A start that failed (a store out of reach) is asked for again by the next call.
      marking.then(
        () => {
          this.#known = true;
        },
        () => {
          if (this.#marking === marking) this.#marking = null;
        },
      );
      this.#marking = marking;
    }
    return this.#marking;
  }

  /** The plan was read with its start time set: nothing to mark. */
  seen(): void {
    this.#known = true;
  }

  /** A start marked on no plan set nothing: once the plan is configured, the next call marks it. */
  forget(): void {
    this.#known = false;
    this.#marking = null;
  }
}
