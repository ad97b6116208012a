import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { main } from '../../src/cli/main.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const PLAN = `version: 1
labels: { team: ml }
decisions:
  - { id: a, tool: echo, input: { message: hi } }
`;

let dir: string;

/** Runs `leash` in this process in the test's folder: its exit code, stdout and stderr. */
async function leash(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    env: {},
    cwd: dir,
    clock: new ManualClock(T0),
  });
  return { code, out, err };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-labels-'));
  writeFileSync(join(dir, 'train.plan.yaml'), PLAN);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('leash run --label', () => {
  it('labels the plan, over the plan file’s labels', async () => {
    expect((await leash(['run', 'train.plan.yaml', '--label', 'user=ann', '--label', 'team=ops'])).code).toBe(
      0,
    );
    const status = JSON.parse((await leash(['status', 'train', '--json'])).out) as {
      guardrails: { labels: unknown };
    };
    expect(status.guardrails.labels).toEqual({ team: 'ops', user: 'ann' });
  });

  it('keeps the last value of a label given twice', async () => {
    await leash(['run', 'train.plan.yaml', '--label', 'user=ann', '--label', 'user=bob']);
    expect((await leash(['status', 'train'])).out).toContain('labels team=ml user=bob');
  });

  it('refuses a label without =, naming the flag and the value, and runs nothing', async () => {
    const r = await leash(['run', 'train.plan.yaml', '--label', 'team']);
    expect([r.code, r.err]).toEqual([
      2,
      expect.stringContaining('--label must be name=value (team=ml), got "team"'),
    ]);
    expect(existsSync(join(dir, '.leash'))).toBe(false);
  });

  it('refuses an upper-case label name', async () => {
    const r = await leash(['run', 'train.plan.yaml', '--label', 'Team=ml']);
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('got "Team=ml"')]);
  });
});

describe('leash status', () => {
  it('shows the labels of a plan', async () => {
    await leash(['run', 'train.plan.yaml', '--label', 'user=Zoë Ng']);
    expect((await leash(['status', 'train'])).out).toContain('\n  labels team=ml user="Zoë Ng"\n');
  });

  it('shows no labels line for a plan without labels', async () => {
    writeFileSync(join(dir, 'plain.plan.yaml'), 'version: 1\ndecisions:\n  - { id: a, tool: echo }\n');
    await leash(['run', 'plain.plan.yaml']);
    expect((await leash(['status', 'plain'])).out).not.toContain('\n  labels ');
  });
});
