/** Tasks by key, each run once those with the same key before it are done, as they started. */
export class OneAtATime {
  /** The last task in flight per key. */
  readonly #inFlight = new Map<string, Promise<unknown>>();

  /** Runs `task` once the tasks with `key` before it are done. */
  run<R>(key: string, task: () => Promise<R>): Promise<R> {
    const before = this.#inFlight.get(key);
    // Nothing before it with this key: it starts now, without waiting a tick for an empty queue.
    const running = before === undefined ? task() : before.then(task, task);
    this.#inFlight.set(key, running);
    const forget = (): void => {
      if (this.#inFlight.get(key) === running) this.#inFlight.delete(key);
    };
    running.then(forget, forget);
    return running;
  }
}
