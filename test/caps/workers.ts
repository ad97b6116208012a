import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { messageReader } from '../support/processes.js';
import type { CapJob, CapWorkerMessage } from './cap-worker.js';

const WORKER = fileURLToPath(new URL('./cap-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A new process running `job` (see cap-worker.ts). */
export function forkCapWorker(job: CapJob): ChildProcess {
  return fork(WORKER, [JSON.stringify(job)], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** The next message of a type from a cap worker. */
export const nextFrom = messageReader<CapWorkerMessage>();
