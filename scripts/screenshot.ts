// Writes docs/dashboard.png: the dashboard's plan page for a demo plan paused for approval, with a
// completed plan and a failed one beside it. Run with
// `npx tsx scripts/screenshot.ts [page] [out.png]`, where page is a dashboard path (default: the paused
// plan's page). Needs Chromium at /usr/bin/chromium (or CHROMIUM).
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { ManualClock } from '../src/clock.js';
import { parsePlanFile } from '../src/runner/planFile.js';
import { PlanRunner } from '../src/runner/runner.js';
import { startDashboard } from '../src/dashboard/server.js';
import { MemoryStore } from '../src/store/memory/MemoryStore.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/support/chromium.js';

const RELEASE = `
version: 1
description: build, test and ship release 42
guardrails:
  max_steps: 12
  tool_budget: 2.5
  required_confirmations: [deploy]
  max_wall_clock_seconds: 1800
decisions:
  - { id: fetch-sources, tool: echo, input: { message: fetched }, cost: 0.05 }
  - { id: build, tool: echo, input: { message: built }, cost: 0.4 }
  - { id: unit-tests, tool: echo, input: { message: passed }, cost: 0.35 }
  - { id: summarize-changes, tool: echo, input: { message: summary }, cost: 0.3 }
  - { id: deploy-production, tool: echo, operation: deploy, input: { message: deployed }, cost: 0.5 }
  - { id: smoke-tests, tool: echo, input: { message: ok }, cost: 0.2 }
  - { id: notify-team, tool: echo, input: { message: notified }, cost: 0.05 }
`;

const NIGHTLY = `
version: 1
guardrails: { max_steps: 5, tool_budget: 1.0 }
decisions:
  - { id: collect, tool: echo, input: { message: collected }, cost: 0.1 }
  - { id: report, tool: echo, input: { message: reported }, cost: 0.15 }
`;

const RESEARCH = `
version: 1
guardrails: { max_steps: 8, tool_budget: 0.5, max_wall_clock_seconds: 600 }
decisions:
  - { id: search, tool: echo, input: { message: found }, cost: 0.2 }
  - { id: read-papers, tool: echo, input: { message: read }, cost: 0.25 }
  - { id: write-draft, tool: echo, input: { message: drafted }, cost: 0.2 }
`;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(root, process.argv[3] ?? 'docs/dashboard.png');
const executablePath = process.env['CHROMIUM'] ?? CHROMIUM;

const clock = new ManualClock(Date.parse('2026-11-30T09:12:00.000Z'));
const store = new MemoryStore();
// Each decision takes its time, so the charts have a time axis to draw on.
const runner = new PlanRunner({
  store,
  clock,
  onEvent: (event) => {
    if (event === 'decision') clock.advance(47_000);
  },
});

async function start(yaml: string, id: string): Promise<void> {
  await runner.start({
    file: parsePlanFile(yaml, { source: `${id}.plan.yaml` }),
    source: `/home/ops/plans/${id}.plan.yaml`,
    baseDir: '/home/ops/plans',
    name: id,
    id,
  });
  clock.advance(95_000);
}

await start(NIGHTLY, 'nightly-report');
await start(RESEARCH, 'research-brief');
await start(RELEASE, 'release-42');
clock.advance(130_000);

const server = await startDashboard({ runner, host: '127.0.0.1', port: 0, clock });
const browser = await chromium.launch({
  executablePath,
  args: [...CHROMIUM_ARGS],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  await page.goto(`${server.url}/?token=${server.token}`);
  await page.goto(`${server.url}${process.argv[2] ?? '/plans/release-42'}`);
  mkdirSync(dirname(out), { recursive: true });
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  await server.close();
}
