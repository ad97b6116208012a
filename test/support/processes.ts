// Processes the tests start, seen from outside, and the messages they exchange with them.
import type { ChildProcess } from 'node:child_process';

/** Whether a process with this pid is running (or a zombie not yet reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A reader of the messages a child sends, typed by their union `M`: `next(child, type)` resolves with the
 * child's next message of that type, and rejects when the child reports `{ type: 'error', message }` or
 * exits first.
 */
export function messageReader<M extends { readonly type: string }>() {
  return function next<K extends M['type']>(child: ChildProcess, type: K): Promise<Extract<M, { type: K }>> {
    return new Promise((resolve, reject) => {
      const stop = () => {
        child.off('exit', onExit);
        child.off('message', onMessage);
      };
      const onMessage = (m: M) => {
        if (m.type === type) {
          stop();
          resolve(m as Extract<M, { type: K }>);
        } else if (m.type === 'error') {
          stop();
          const text = (m as { readonly message?: unknown }).message;
          reject(new Error(`worker ${child.pid} failed: ${String(text)}`));
        }
      };
      const onExit = (code: number | null) => {
        stop();
        reject(new Error(`worker ${child.pid} exited with ${code} before "${type}"`));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  };
}

/** Resolves once `child` has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));
}

/** In a child forked with an IPC channel: sends `message` to the parent, resolving once it is handed over. */
export function toParent(message: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.send === undefined) throw new Error('this worker must be started with an IPC channel (fork)');
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}
