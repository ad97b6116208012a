// The `leash` process: wires the command to this process's streams, environment and signals.
import { main } from './main.js';

// The first Ctrl-C (or SIGTERM) stops the command cleanly: a run aborts the step running (a shell step's
// whole process group gets SIGTERM, then SIGKILL after a grace period), records that it was interrupted
// with the work done so far, and exits 1; `serve` and `audit --follow` end. Only a third one exits at
// once, for when even that cannot finish (a store that does not answer): a second, pressed while the
// grace period runs, must not skip the SIGKILL of a command that ignores SIGTERM.
const controller = new AbortController();
let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signals++;
    if (signals > 2) process.exit(130);
    controller.abort();
  });
}
// A reader that stops reading (`leash audit … | head -1`) closes the pipe: the command then stops as at a
// first Ctrl-C, quietly, rather than dying of an EPIPE stack trace (a run is recorded as interrupted, not
// left mid-step). What it still prints goes nowhere.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  controller.abort();
});
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  ...(process.argv[1] === undefined ? {} : { bin: process.argv[1] }),
  signal: controller.signal,
});
