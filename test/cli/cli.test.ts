import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AutonomyGuardrailService, RunGuard, SqliteStore, type ToolCallOutcome } from '../../src/index.js';

// Each test starts the command a few times, each start a new Node.js process.
vi.setConfig({ testTimeout: 60_000 });

// The command runs as its own process, as a person or a script would run it.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
// Resolved here: the command runs in a temporary folder, where the package cannot be found by name.
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const RELEASE = join(ROOT, 'examples/release.plan.yaml');

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

let dir: string;

function leash(args: readonly string[], env: NodeJS.ProcessEnv = {}): Ran {
  const r = spawnSync(process.execPath, ['--import', TSX, BIN, ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, LEASH_DB: '', ...env, NO_COLOR: '1' },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function json<T = Record<string, unknown>>(r: Ran): T {
  return JSON.parse(r.stdout) as T;
}

function plan(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const TWO_ECHOES = `version: 1
decisions:
  - { id: first, tool: echo, input: { message: one } }
  - { id: second, tool: echo, input: { message: two } }
`;

/** What a child process writes to one of its streams, and a wait for a text to appear in it. */
function collect(child: ChildProcess, stream: 'stdout' | 'stderr' = 'stdout') {
  let text = '';
  const waiters = new Set<() => void>();
  child[stream]?.on('data', (b: Buffer) => {
    text += b.toString();
    for (const check of waiters) check();
  });
  return {
    text: () => text,
    /** Resolves once `wanted` was written; rejects after 20 s. */
    seen: (wanted: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`"${wanted}" not seen in: ${text}`)), 20_000);
        const check = () => {
          if (!text.includes(wanted)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
  };
}

/** Runs the release example to its pause; returns the pending approval's id. */
function pausedRelease(): string {
  copyFileSync(RELEASE, join(dir, 'release.plan.yaml'));
  const r = leash(['run', 'release.plan.yaml', '--json']);
  expect(r.code).toBe(4);
  return (json<{ approval: { id: string } }>(r).approval as { id: string }).id;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-cli-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('leash --help', () => {
  it('lists every command and exits 0', () => {
    const r = leash(['--help']);
    expect([
      r.code,
      ...[
        'run',
        'status',
        'audit',
        'verify',
        'approvals',
        'approve',
        'deny',
        'resume',
        'serve',
        'policy',
        'schema',
        'budgets',
        'notifications',
      ].map((c) => r.stdout.includes(`${c} `)),
    ]).toEqual([0, ...Array(13).fill(true)]);
  });

  it('documents the exit codes', () => {
    expect(leash(['--help']).stdout).toMatch(/3 stopped by a guardrail · 4 awaiting confirmation/);
  });

  it('says in the help of run that a policy keeps the stricter of each limit', () => {
    const help = leash(['run', '--help']).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('each limit is the stricter of its own and the plan file’s');
  });

  it('shows examples in the help of a command', () => {
    expect(leash(['run', '--help']).stdout).toContain('$ npx leash run examples/release.plan.yaml');
  });

  it('exits 2 on an unknown command', () => {
    expect(leash(['launch']).code).toBe(2);
  });

  it('exits 2 when a required option is missing', () => {
    const r = leash(['deny', 'a1', '--by', 'alice']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("required option '--reason <text>'")]);
  });
});

describe('leash run', () => {
  it('runs a plan to completion, exits 0 and keeps its state in ./.leash/leash.db', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    const r = leash(['run', 'hello.plan.yaml']);
    expect([r.code, r.stdout.trim(), existsSync(join(dir, '.leash/leash.db'))]).toEqual([
      0,
      'plan hello: completed (2/2 decisions done)',
      true,
    ]);
  });

  it('prints progress per decision with steps, budget and elapsed time', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    expect(leash(['run', 'hello.plan.yaml']).stderr).toContain(
      '✓ first  steps 1 (no limit) · budget 0.00 (no limit)',
    );
  });

  const PRINTING = `version: 1
decisions:
  - { id: build, tool: shell, input: { argv: [node, -e, "for (let i = 1; i <= 5; i++) console.log('line ' + i)"] } }
`;

  it('prints the last lines each step printed under its line', () => {
    plan('printing.plan.yaml', PRINTING);
    const r = leash(['run', 'printing.plan.yaml']);
    expect(r.stderr).toContain('  ✓ build');
    expect(r.stderr).toContain('    │ line 3\n    │ line 4\n    │ line 5\n');
    expect(r.stderr).not.toContain('line 2');
  });

  it('prints all each step printed with --verbose', () => {
    plan('printing.plan.yaml', PRINTING);
    expect(leash(['run', 'printing.plan.yaml', '--verbose']).stderr).toContain(
      '    │ line 1\n    │ line 2\n',
    );
  });

  it('prints all each step printed when approve --verbose runs the rest of the plan', () => {
    plan(
      'gated.plan.yaml',
      `version: 1
guardrails: { required_confirmations: [deploy] }
decisions:
  - { id: deploy, tool: shell, operation: deploy, input: { argv: [node, -e, "for (let i = 1; i <= 5; i++) console.log('line ' + i)"] } }
`,
    );
    const id = json<{ approval: { id: string } }>(leash(['run', 'gated.plan.yaml', '--json'])).approval.id;
    const r = leash(['approve', id, '--by', 'alice', '--verbose']);
    expect(r.stderr).toContain('    │ line 1\n    │ line 2\n');
  });

  it('shows the last lines each decision done printed in status', () => {
    plan('printing.plan.yaml', PRINTING);
    leash(['run', 'printing.plan.yaml']);
    expect(leash(['status', 'printing']).stdout).toContain('  ✓ build\n    │ line 3\n');
  });

  it('gives the outputs of the decisions done in status --json', () => {
    plan('printing.plan.yaml', PRINTING);
    leash(['run', 'printing.plan.yaml']);
    const status = json<{ completed: { decision_id: string; output: { stdout: string } }[] }>(
      leash(['status', 'printing', '--json']),
    );
    expect(status.completed[0]?.output.stdout).toBe('line 1\nline 2\nline 3\nline 4\nline 5\n');
  });

  it('leaves the outputs of the decisions done out of the rows of status --json for every plan', () => {
    plan('printing.plan.yaml', PRINTING);
    leash(['run', 'printing.plan.yaml']);
    const rows = json<Record<string, unknown>[]>(leash(['status', '--json']));
    expect(rows.map((r) => [r['plan_id'], 'completed' in r])).toEqual([['printing', false]]);
  });

  it('prints the outputs of the decisions with --json', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    const out = json<{ status: string; completed: { output: unknown }[] }>(
      leash(['run', 'hello.plan.yaml', '--json']),
    );
    expect([out.status, out.completed.map((c) => c.output)]).toEqual(['completed', ['one', 'two']]);
  });

  it('numbers the plan id when a plan of that name exists', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    expect(json(leash(['run', 'hello.plan.yaml', '--json']))['plan_id']).toBe('hello-2');
  });

  it('refuses an explicit plan id that is taken, with exit 2', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml', '--id', 'mine']);
    const r = leash(['run', 'hello.plan.yaml', '--id', 'mine']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('plan id "mine" is taken')]);
  });

  it('pauses at a step that needs a person, exits 4 and says how to approve', () => {
    copyFileSync(RELEASE, join(dir, 'release.plan.yaml'));
    const r = leash(['run', 'release.plan.yaml']);
    expect([r.code, r.stdout]).toEqual([
      4,
      expect.stringMatching(/awaiting confirmation \(2\/4 decisions done\)[\s\S]*leash approve \S+ --by/),
    ]);
  });

  it('exits 3 when a guardrail stops the plan, keeping the work done', () => {
    plan(
      'tight.plan.yaml',
      `version: 1\nguardrails: { max_steps: 1 }\n${TWO_ECHOES.split('\n').slice(1).join('\n')}`,
    );
    const r = leash(['run', 'tight.plan.yaml', '--json']);
    const out = json<{ status: string; outcome: { guard: string }; completed: unknown[] }>(r);
    expect([r.code, out.status, out.outcome.guard, out.completed.length]).toEqual([
      3,
      'failed',
      'step_limit',
      1,
    ]);
  });

  it('exits 1 when a tool fails for good', () => {
    plan(
      'broken.plan.yaml',
      'version: 1\ndecisions:\n  - { id: fail, tool: shell, input: { argv: [no-such-command-here] } }\n',
    );
    const r = leash(['run', 'broken.plan.yaml']);
    expect([r.code, r.stdout]).toEqual([1, expect.stringContaining('no-such-command-here')]);
  });

  const FAILING = `version: 1
guardrails: { actor_limits: { max_retries_per_failure: 2 } }
decisions:
  - { id: tests, tool: shell, input: { argv: [node, -e, "console.error('expected 2, got 3'); process.exit(7)"] } }
`;

  it('exits 1, not 3, when a failing tool runs out of retries', () => {
    plan('failing.plan.yaml', FAILING);
    const r = leash(['run', 'failing.plan.yaml', '--json']);
    expect([r.code, json<{ outcome: { guard?: string } }>(r).outcome.guard]).toEqual([1, undefined]);
  });

  it('prints the exit code and stderr of a tool that failed after its retries', () => {
    plan('failing.plan.yaml', FAILING);
    const r = leash(['run', 'failing.plan.yaml']);
    expect(r.stdout).toContain('failed: decision "tests" failed after 3 tries');
    expect(r.stdout).toContain('exited with code 7: expected 2, got 3');
  });

  it('keeps the last error of the failed decision in the outcome of --json', () => {
    plan('failing.plan.yaml', FAILING);
    const { outcome } = json<{ outcome: Record<string, unknown> }>(
      leash(['run', 'failing.plan.yaml', '--json']),
    );
    expect(outcome).toMatchObject({
      decisionId: 'tests',
      attempts: 3,
      error: expect.stringMatching(/exited with code 7: expected 2, got 3$/),
    });
  });

  it('shows the last error of a failed run in status and its --json', () => {
    plan('failing.plan.yaml', FAILING);
    leash(['run', 'failing.plan.yaml']);
    expect(leash(['status', 'failing']).stdout).toContain('exited with code 7: expected 2, got 3');
    const status = json<{ outcome: { error: string } }>(leash(['status', 'failing', '--json']));
    expect(status.outcome.error).toContain('exited with code 7: expected 2, got 3');
  });

  it('records the tool’s last error in the audit entry that refuses another retry', () => {
    plan('failing.plan.yaml', FAILING);
    leash(['run', 'failing.plan.yaml']);
    const log = json<{ event_type: string; details: { error?: string } }[]>(
      leash(['audit', 'failing', '--format', 'json']),
    );
    const blocked = log.find((e) => e.event_type === 'retry_blocked');
    expect(blocked?.details.error).toContain('exited with code 7: expected 2, got 3');
  });

  it('exits 2 for an invalid plan file, naming the path of the problem', () => {
    plan('bad.plan.yaml', 'version: 1\ndecisions:\n  - { id: a, tool: shell, input: { argv: [] } }\n');
    const r = leash(['run', 'bad.plan.yaml']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('decisions[0].input.argv')]);
  });

  it('exits 2 for a plan file that does not exist', () => {
    const r = leash(['run', 'missing.plan.yaml']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('no such file')]);
  });

  it('applies the guardrails of a policy file instead of the plan file’s', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    plan('policy.yaml', 'version: 1\nguardrails: { max_steps: 1 }\n');
    expect(leash(['run', 'hello.plan.yaml', '--policy', 'policy.yaml']).code).toBe(3);
  });

  it('prints a JSON error with its code and field under --json', () => {
    plan('bad.plan.yaml', 'version: 2\ndecisions: []\n');
    const r = leash(['run', 'bad.plan.yaml', '--json']);
    expect(JSON.parse(r.stderr)).toMatchObject({ error: { field: expect.any(String) } });
  });
});

describe('approving and denying from the terminal', () => {
  it('lists the pending approval', () => {
    const id = pausedRelease();
    const list = json<{ id: string; status: string; decisionId: string }[]>(
      leash(['approvals', '--status', 'pending', '--json']),
    );
    expect(list.map((a) => [a.id, a.status, a.decisionId])).toEqual([[id, 'pending', 'deploy']]);
  });

  it('approves, resumes the plan to completion and exits 0', () => {
    const id = pausedRelease();
    const r = leash(['approve', id, '--by', 'alice', '--reason', 'change window open', '--json']);
    const out = json<{ approval: { status: string; decidedBy: string }; run: { status: string } }>(r);
    expect([r.code, out.approval.status, out.approval.decidedBy, out.run.status]).toEqual([
      0,
      'approved',
      'alice',
      'completed',
    ]);
  });

  it('records who approved and why in the audit log', () => {
    const id = pausedRelease();
    leash(['approve', id, '--by', 'alice', '--reason', 'change window open']);
    const lines = leash(['audit', 'release', '--format', 'jsonl'])
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.find((e) => e.event_type === 'confirmation_approved')?.details).toMatchObject({
      by: 'alice',
      reason: 'change window open',
    });
  });

  it('records an approval without resuming under --no-resume, and resume continues the plan', () => {
    const id = pausedRelease();
    const approved = leash(['approve', id, '--by', 'alice', '--no-resume']);
    const resumed = leash(['resume', 'release']);
    expect([approved.code, approved.stdout, resumed.code]).toEqual([
      0,
      expect.stringContaining('leash resume release'),
      0,
    ]);
  });

  it('denies, ends the plan without running the step and records why', () => {
    const id = pausedRelease();
    const r = leash(['deny', id, '--by', 'bob', '--reason', 'release freeze']);
    const status = json<{ phase: string; outcome: { completed: number } }>(
      leash(['status', 'release', '--json']),
    );
    expect([r.code, status.phase, status.outcome.completed]).toEqual([0, 'failed', 2]);
  });

  it('exits 2 when approving an approval that was already decided', () => {
    const id = pausedRelease();
    leash(['approve', id, '--by', 'alice']);
    const r = leash(['approve', id, '--by', 'alice']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('already')]);
  });

  it('exits 2 when resuming a plan that is not paused', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    expect(leash(['resume', 'hello']).code).toBe(2);
  });
});

describe('approving and denying the calls of an agent', () => {
  const DB = 'agent.db';

  /** Runs `body` with a RunGuard of plan `agent` and its service, on the SQLite file the command uses. */
  async function withGuard<T>(body: (guard: RunGuard, service: AutonomyGuardrailService) => Promise<T>) {
    const store = new SqliteStore({ path: join(dir, DB) });
    await store.migrate();
    try {
      const service = new AutonomyGuardrailService({ store });
      return await body(new RunGuard({ service, planId: 'agent' }), service);
    } finally {
      await store.close();
    }
  }

  /** The agent's call of `deploy`, which counts its runs in `ran`. */
  const ran = { calls: 0 };
  const deploy = (input: unknown = { to: 'prod' }) => ({
    toolCallId: 'call-1',
    toolName: 'deploy',
    input,
    run: () => ++ran.calls,
  });

  /** An agent's plan whose call of `deploy` waits for a person; the approval's id. */
  async function agentAsked(input?: unknown): Promise<string> {
    ran.calls = 0;
    return withGuard(async (guard, service) => {
      await service.configureGuardrails('agent', { requiredConfirmations: ['deploy'] });
      const out = await guard.toolCall(deploy(input));
      if (out.allowed || out.approval === undefined) throw new Error('the call should wait for a person');
      return out.approval.id;
    });
  }

  /** The agent calls `deploy` again, as it does after a person decided. */
  function callAgain(): Promise<ToolCallOutcome<number>> {
    return withGuard((guard) => guard.toolCall(deploy()));
  }

  function approval(id: string) {
    return withGuard((_guard, service) => service.getApproval(id));
  }

  it('lists the tool and a preview of the input the agent asked to call', async () => {
    await agentAsked();
    const r = leash(['approvals', '--db', DB]);
    expect(r.stdout).toContain('\n  tool deploy · input {"to":"prod"}');
  });

  it('lists the tool and the preview under --json', async () => {
    await agentAsked();
    const [a] = json<{ toolName: string; inputPreview: string }[]>(
      leash(['approvals', '--db', DB, '--json']),
    );
    expect([a?.toolName, a?.inputPreview]).toEqual(['deploy', '{"to":"prod"}']);
  });

  it('shows a character of the input that could rewrite the line as an escape', async () => {
    await agentAsked({ to: 'prod\u202e', bell: '\u0007' });
    const r = leash(['approvals', '--db', DB]);
    expect([r.stdout.includes('\u202e'), r.stdout.includes('\u0007')]).toEqual([false, false]);
    expect(r.stdout).toContain('input {"bell":"\\u0007","to":"prod\\u202e"}');
  });

  it('approves, records who and why, exits 0 and says the application resumes the run', async () => {
    const id = await agentAsked();
    const r = leash(['approve', id, '--by', 'alice', '--reason', 'checked', '--db', DB]);
    expect([r.code, r.stdout]).toEqual([
      0,
      expect.stringContaining('the application that asked resumes the run'),
    ]);
    expect(await approval(id)).toMatchObject({ status: 'approved', decidedBy: 'alice', reason: 'checked' });
  });

  it('says under --json that the application resumes the run', async () => {
    const id = await agentAsked();
    const r = leash(['approve', id, '--by', 'alice', '--db', DB, '--json']);
    const out = json<{ approval: { status: string }; run: null; resumed_by: string }>(r);
    expect([r.code, out.approval.status, out.run, out.resumed_by]).toEqual([
      0,
      'approved',
      null,
      'application',
    ]);
  });

  it('lets the agent run the approved call once', async () => {
    const id = await agentAsked();
    leash(['approve', id, '--by', 'alice', '--db', DB]);
    const first = await callAgain();
    const second = await callAgain();
    expect([first.allowed, second.allowed, ran.calls]).toEqual([true, false, 1]);
  });

  it('denies, records who and why, exits 0 and says the application gets the denial', async () => {
    const id = await agentAsked();
    const r = leash(['deny', id, '--by', 'bob', '--reason', 'not today', '--db', DB]);
    expect([r.code, r.stdout]).toEqual([
      0,
      expect.stringContaining('the application that asked gets the denial'),
    ]);
    expect(await approval(id)).toMatchObject({ status: 'denied', decidedBy: 'bob', reason: 'not today' });
  });

  it('refuses the denied call to the agent without running it', async () => {
    const id = await agentAsked();
    leash(['deny', id, '--by', 'bob', '--reason', 'not today', '--db', DB]);
    const out = await callAgain();
    expect([out.allowed === false && out.check.eventType, ran.calls]).toEqual(['confirmation_denied', 0]);
  });
});

describe('status, audit and verify', () => {
  it('lists every plan in a table', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    const r = leash(['status']);
    expect(r.stdout.split('\n')[1]).toMatch(/^hello\s+completed\s+2 \(no limit\)/);
  });

  it('shows a paused plan with its pending approval', () => {
    const id = pausedRelease();
    expect(leash(['status', 'release']).stdout).toContain(`waiting for a person: approval ${id}`);
  });

  it('exits 2 for the status of an unknown plan, naming the database searched', () => {
    plan('two.plan.yaml', TWO_ECHOES);
    leash(['run', 'two.plan.yaml']);
    const r = leash(['status', 'nope']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(join(dir, '.leash/leash.db'))]);
  });

  it('prints the audit log as a table, oldest first', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    const lines = leash(['audit', 'hello']).stdout.trim().split('\n');
    expect([lines[0], lines[1]]).toEqual([
      expect.stringMatching(/^SEQ\s+TIME\s+EVENT\s+GUARD\s+RESULT\s+DETAILS$/),
      expect.stringMatching(/^1\s/),
    ]);
  });

  it('prints the audit log as one JSON array with --format json, each entry with its chain fields', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    const log = json<{ seq: number; prev: string; hash: string }[]>(
      leash(['audit', 'hello', '--format', 'json']),
    );
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
  });

  it('verifies every plan’s chain and exits 0', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    const r = leash(['verify']);
    expect([r.code, r.stdout]).toEqual([0, expect.stringMatching(/hello\s+\d+\s+[0-9a-f]{16}\s+ok/)]);
  });

  it('finds a tampered entry and exits 1', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    const db = new Database(join(dir, '.leash/leash.db'));
    db.prepare('UPDATE leash_audit_entries SET details = \'{"forged":true}\' WHERE seq = 2').run();
    db.close();
    const r = leash(['verify', 'hello', '--json']);
    expect([r.code, json<{ findings: { code: string }[] }[]>(r)[0]?.findings[0]?.code]).toEqual([
      1,
      'HASH_MISMATCH',
    ]);
  });

  describe('verify with a damaged database', () => {
    interface Reported {
      planId: string;
      ok: boolean;
      findings?: { code: string; seq?: number }[];
      error?: { code: string };
    }

    /** Plans hello and world, run; `damage` then runs on the database past the store. */
    function twoPlans(damage: string): void {
      plan('hello.plan.yaml', TWO_ECHOES);
      plan('world.plan.yaml', TWO_ECHOES);
      leash(['run', 'hello.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '1' });
      leash(['run', 'world.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '1' });
      const db = new Database(join(dir, '.leash/leash.db'));
      db.exec(damage);
      db.close();
    }

    const MALFORMED_ROW =
      "UPDATE leash_audit_entries SET details = '{not json' WHERE plan_id = 'hello' AND seq = 2";

    it('reports every plan, and a row that cannot be read as MALFORMED_ENTRY at its seq, exiting 1', () => {
      twoPlans(MALFORMED_ROW);
      const r = leash(['verify', '--json']);
      const reports = json<Reported[]>(r).map((p) => [
        p.planId,
        p.ok,
        p.findings?.map((f) => [f.code, f.seq]),
      ]);
      expect([r.code, reports]).toEqual([
        1,
        [
          ['hello', false, [['MALFORMED_ENTRY', 2]]],
          ['world', true, []],
        ],
      ]);
    });

    it('names the MALFORMED_ENTRY finding and its seq in the table', () => {
      twoPlans(MALFORMED_ROW);
      expect(leash(['verify']).stdout).toContain('hello #2: MALFORMED_ENTRY');
    });

    it('verifies a plan named on the command line whose trail holds a row that cannot be read', () => {
      twoPlans(MALFORMED_ROW);
      const r = leash(['verify', 'hello', '--json']);
      expect([r.code, json<Reported[]>(r)[0]?.findings?.map((f) => f.code)]).toEqual([
        1,
        ['MALFORMED_ENTRY'],
      ]);
    });

    it('reports the other plans when one cannot be verified at all, exiting 1', () => {
      twoPlans("UPDATE leash_checkpoints SET head = 'damaged' WHERE plan_id = 'hello'");
      const r = leash(['verify', '--json']);
      const reports = json<Reported[]>(r).map((p) => [p.planId, p.ok, p.error?.code]);
      expect([r.code, reports]).toEqual([
        1,
        [
          ['hello', false, 'GUARDRAIL_VALIDATION'],
          ['world', true, undefined],
        ],
      ]);
    });

    it('says in the table why a plan could not be verified', () => {
      twoPlans("UPDATE leash_checkpoints SET head = 'damaged' WHERE plan_id = 'hello'");
      expect(leash(['verify']).stdout).toMatch(/hello: GUARDRAIL_VALIDATION .*head/);
    });
  });

  it('numbers the steps in the audit table from 1, as the run’s progress does', () => {
    plan('hello.plan.yaml', TWO_ECHOES.replace('decisions:', 'guardrails: { max_steps: 5 }\ndecisions:'));
    leash(['run', 'hello.plan.yaml']);
    const steps = leash(['audit', 'hello']).stdout.match(/step \d+\/\d+/g);
    expect(steps).toEqual(['step 1/5', 'step 2/5']);
  });

  it('shows the confirmation that paused a plan as waiting in the audit table, as the dashboard does', () => {
    pausedRelease();
    const row = leash(['audit', 'release'])
      .stdout.split('\n')
      .find((l) => l.includes('confirmation_required'));
    expect(row).toMatch(/confirmation_required\s+confirmation\s+waiting\s/);
  });

  it('ends quietly with exit 0 when the reader of its output stops reading', async () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    const child = spawn(process.execPath, ['--import', TSX, BIN, 'audit', 'hello'], {
      cwd: dir,
      env: { ...process.env, LEASH_DB: '' },
    });
    child.stdout.destroy(); // as `leash audit hello | head -1` does once it has its line
    const errors = collect(child, 'stderr');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect([code, errors.text()]).toEqual([0, '']);
  });

  it('follows the audit log as entries are recorded, until stopped', async () => {
    const id = pausedRelease();
    const child = spawn(
      process.execPath,
      ['--import', TSX, BIN, 'audit', 'release', '--format', 'jsonl', '--follow'],
      {
        cwd: dir,
        env: { ...process.env, LEASH_DB: '' },
      },
    );
    const output = collect(child);
    await output.seen('confirmation_required');
    leash(['approve', id, '--by', 'alice']);
    await output.seen('confirmation_approved');
    const code = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect([await code, output.text().includes('budget_committed')]).toEqual([0, true]);
  });
});

describe('the store in use', () => {
  const READ_ONLY: readonly (readonly string[])[] = [
    ['status'],
    ['approvals'],
    ['audit', 'release'],
    ['verify'],
    ['checkpoints'],
    ['serve', '--port', '0'],
  ];

  it.each(READ_ONLY)(
    '%s exits 2 on a database that does not exist, naming it and creating nothing',
    (...args) => {
      const r = leash([...args, '--db', 'typo/leash.db']);
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(join(dir, 'typo/leash.db'))]);
      expect(existsSync(join(dir, 'typo'))).toBe(false);
    },
  );

  it('names the database searched when an approval is not found', () => {
    plan('two.plan.yaml', TWO_ECHOES);
    leash(['run', 'two.plan.yaml', '--db', 'ci.db']);
    const r = leash(['approve', 'no-such-approval', '--by', 'alice', '--db', 'ci.db']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(join(dir, 'ci.db'))]);
  });

  it('prints approve and deny hints that carry the --db the run used', () => {
    copyFileSync(RELEASE, join(dir, 'release.plan.yaml'));
    const r = leash(['run', 'release.plan.yaml', '--db', 'ci.db']);
    expect(r.stdout).toMatch(/leash approve \S+ --by "\$USER" --reason 'looks right' --db \S+ci\.db\n/);
    expect(r.stdout).toMatch(/leash deny \S+ --by "\$USER" --reason 'not now' --db \S+ci\.db\n/);
  });

  it('prints hints without --db for the default database', () => {
    copyFileSync(RELEASE, join(dir, 'release.plan.yaml'));
    expect(leash(['run', 'release.plan.yaml']).stdout).not.toContain('--db');
  });
});

describe('interrupting and abandoning', () => {
  const SLOW = `version: 1
decisions:
  - { id: first, tool: echo, input: { message: one } }
  - { id: wait, tool: sleep, input: { seconds: 30 } }
  - { id: never, tool: echo, input: { message: never } }
`;

  it('ends a run stopped with Ctrl-C as failed, keeping the work done, with exit 1', async () => {
    plan('slow.plan.yaml', SLOW);
    const child = spawn(process.execPath, ['--import', TSX, BIN, 'run', 'slow.plan.yaml'], {
      cwd: dir,
      env: { ...process.env, LEASH_DB: '' },
    });
    const progress = collect(child, 'stderr');
    await progress.seen('✓ first');
    const code = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    const status = [
      await code,
      json<{ phase: string; outcome: { completed: number; reason: string } }>(
        leash(['status', 'slow', '--json']),
      ),
    ];
    expect(status).toEqual([
      1,
      expect.objectContaining({
        phase: 'failed',
        outcome: expect.objectContaining({ completed: 1, reason: expect.stringContaining('interrupted') }),
      }),
    ]);
  });

  it('marks a run whose process was killed as failed with abandon', async () => {
    plan('slow.plan.yaml', SLOW);
    const child = spawn(process.execPath, ['--import', TSX, BIN, 'run', 'slow.plan.yaml'], {
      cwd: dir,
      env: { ...process.env, LEASH_DB: '' },
    });
    await collect(child, 'stderr').seen('✓ first');
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    const abandoned = leash(['abandon', 'slow', '--by', 'alice']);
    const status = json<{ phase: string }>(leash(['status', 'slow', '--json']));
    expect([abandoned.code, status.phase]).toEqual([0, 'failed']);
  });

  it('refuses to abandon a plan that is not running, with exit 2', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml']);
    expect(leash(['abandon', 'hello', '--by', 'alice']).code).toBe(2);
  });
});

describe('leash serve', () => {
  // The dashboard shows a database that exists: a run makes one.
  beforeEach(() => {
    plan('two.plan.yaml', TWO_ECHOES);
    leash(['run', 'two.plan.yaml']);
  });

  it('serves the dashboard with the token it prints, refuses requests without it, and stops on SIGTERM', async () => {
    const token = 'a-token-of-at-least-thirty-two-characters';
    const child = spawn(process.execPath, ['--import', TSX, BIN, 'serve', '--port', '0'], {
      cwd: dir,
      env: { ...process.env, LEASH_DB: '', LEASH_TOKEN: token },
    });
    const output = collect(child);
    await output.seen('?token=');
    const address = /(http:\/\/127\.0\.0\.1:\d+)\/\?token=(\S+)/.exec(output.text());
    const base = address?.[1] ?? '';
    const withToken = await fetch(`${base}/approvals`, { headers: { authorization: `Bearer ${token}` } });
    const without = await fetch(`${base}/approvals`);
    const code = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect([address?.[2], withToken.status, without.status, await code]).toEqual([token, 200, 401, 0]);
  });

  it('refuses a port in use with exit 2, naming --port', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      const r = leash(['serve', '--port', String(port)]);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(new RegExp(`port ${port}.*--port`))]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('refuses a LEASH_TOKEN shorter than 32 characters with exit 2', () => {
    const r = leash(['serve', '--port', '0'], { LEASH_TOKEN: 'short' });
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('token')]);
  });
});

describe('checkpoints and signing keys', () => {
  it('exports the checkpoints the store wrote as JSON lines', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '2' });
    const lines = leash(['checkpoints', 'hello'])
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { size: number });
    const entries = json<unknown[]>(leash(['audit', 'hello', '--format', 'json'])).length;
    const every2 = Array.from({ length: Math.floor(entries / 2) }, (_, i) => 2 * (i + 1));
    expect([entries > 2, lines.map((c) => c.size)]).toEqual([true, every2]);
  });

  it('writes no checkpoints with LEASH_CHECKPOINT_EVERY=0', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '0' });
    expect(leash(['checkpoints', 'hello']).stdout).toBe('');
  });

  it('signs checkpoints with the key made by keygen, and verify checks them with its public half', () => {
    leash(['keygen', 'signing']);
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '1', LEASH_SIGNING_KEY: 'signing.key.pem' });
    const exported = leash(['checkpoints', 'hello']).stdout;
    writeFileSync(join(dir, 'kept.jsonl'), exported);
    const r = leash(['verify', 'hello', '--checkpoints', 'kept.jsonl', '--public-key', 'signing.pub.pem']);
    expect([r.code, exported.includes('"signature"')]).toEqual([0, true]);
  });

  it('finds a log cut after its checkpoints were exported, and exits 1', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '1' });
    writeFileSync(join(dir, 'kept.jsonl'), leash(['checkpoints', 'hello']).stdout);
    const db = new Database(join(dir, '.leash/leash.db'));
    db.prepare(
      'DELETE FROM leash_audit_entries WHERE seq = (SELECT max(seq) FROM leash_audit_entries)',
    ).run();
    db.close();
    const r = leash(['verify', 'hello', '--checkpoints', 'kept.jsonl', '--json']);
    expect([r.code, json<{ findings: { code: string }[] }[]>(r)[0]?.findings.map((f) => f.code)]).toEqual([
      1,
      ['TRUNCATED'],
    ]);
  });

  it('prunes the oldest entries up to a checkpoint, and the kept log still verifies', () => {
    plan('hello.plan.yaml', TWO_ECHOES);
    leash(['run', 'hello.plan.yaml'], { LEASH_CHECKPOINT_EVERY: '4' });
    const pruned = json<{ removed: number; pruned_through: number }>(
      leash(['prune', 'hello', '--keep', '3', '--json']),
    );
    const verified = leash(['verify', 'hello']);
    expect([pruned.removed > 0, pruned.removed, verified.code, verified.stdout]).toEqual([
      true,
      pruned.pruned_through,
      0,
      expect.stringContaining(`ok (pruned through seq ${pruned.pruned_through})`),
    ]);
  });

  it('refuses to overwrite an existing key with exit 2', () => {
    leash(['keygen', 'signing']);
    expect(leash(['keygen', 'signing']).code).toBe(2);
  });
});

describe('policy and schema', () => {
  it('validates a good policy file with exit 0', () => {
    plan('policy.yaml', 'version: 1\nguardrails: { max_steps: 3 }\n');
    expect(leash(['policy', 'validate', 'policy.yaml']).code).toBe(0);
  });

  it('refuses a bad policy file with exit 2, naming the path', () => {
    plan('policy.yaml', 'version: 1\nguardrails: { max_steps: 0 }\n');
    const r = leash(['policy', 'validate', 'policy.yaml']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('guardrails.max_steps')]);
  });

  it('prints the plan file JSON Schema', () => {
    expect(json(leash(['schema']))['$id']).toBe('leash-plan.schema.json');
  });

  it('prints the policy JSON Schema with --policy', () => {
    expect(json(leash(['schema', '--policy']))['$id']).toBe('leash-policy.schema.json');
  });
});
