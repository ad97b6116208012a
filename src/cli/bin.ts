// The `leash` process: wires the command to this process's streams, environment and signals.
import { main } from './main.js';

// The first Ctrl-C ends long-running commands (`serve`, `audit --follow`) cleanly. A run is not cut
// short: the command it runs gets the same signal from the terminal, fails, and the run records that
// and ends. A second Ctrl-C stops at once.
const controller = new AbortController();
let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signals++;
    if (signals > 1) process.exit(130);
    controller.abort();
  });
}
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
});
