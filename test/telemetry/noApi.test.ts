// leash in a process where @opentelemetry/api is not installed: a resolve hook hides it from `require`
// and from `import` in a child process, which runs a guarded agent through RunGuard.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL('./noApi-child.ts', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./noApi-preload.mjs', import.meta.url));

interface ChildReport {
  readonly telemetryIsNull: boolean;
  readonly outcomes: unknown[];
  readonly spent: number;
  readonly hidden: string[];
  readonly loaded: string[];
  readonly requireMissing: boolean;
  readonly importMissing: boolean;
}

async function child(hideApi: boolean): Promise<ChildReport> {
  const preload = hideApi ? ['--import', PRELOAD] : [];
  const { stdout } = await run(process.execPath, ['--import', 'tsx', ...preload, CHILD], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as ChildReport;
}

it('runs a guarded agent without @opentelemetry/api: no telemetry, and nothing of OpenTelemetry loaded', async () => {
  const report = await child(true);

  expect(report).toEqual({
    telemetryIsNull: true,
    // Three model and tool calls allowed, then the fourth tool call refused at the step limit.
    outcomes: [true, 'found 1', true, 'found 2', true, 'found 3', true, 'step_blocked'],
    spent: 0.048,
    hidden: ['@opentelemetry/api'],
    loaded: [],
    requireMissing: true,
    importMissing: true,
  });
}, 60_000);

it('loads @opentelemetry/api in the same child when it is not hidden', async () => {
  const report = await child(false);

  expect(report.telemetryIsNull).toBe(false);
  expect(report.loaded.some((file) => file.includes('@opentelemetry/api'))).toBe(true);
  expect(report.outcomes).toEqual([true, 'found 1', true, 'found 2', true, 'found 3', true, 'step_blocked']);
}, 60_000);
