// Every command leash prints for a person runs when pasted into bash as it is: each is handed to bash
// with a stub `leash` (or `npx`) on the PATH that prints the arguments it was given, or that runs leash.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChainedEntry } from '../../src/audit/chain.js';
import type { VerifyReport } from '../../src/audit/verify.js';
import { invokedAs } from '../../src/cli/invokedAs.js';
import { leashIn } from '../support/cli.js';
import { dbArgument } from '../../src/cli/openStore.js';
import { AUDIT_ROWS, auditPage } from '../../src/dashboard/pages/audit.js';
import { plansPage } from '../../src/dashboard/pages/plans.js';
import { approvalText } from '../../src/mcp/denials.js';
import { NPX_LEASH, shellWord, type CommandStyle } from '../../src/runner/commandLine.js';
import type { Approval } from '../../src/store/GuardrailStore.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { textOf } from '../dashboard/support.js';

// Two tests paste a command that starts leash as its own process.
vi.setConfig({ testTimeout: 60_000 });

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

/** A stub that prints each argument it was given, ended by a NUL. */
const PRINT_ARGS = `printf '%s\\0' "$@"`;

const CONFIRM_PLAN = `version: 1
guardrails: { required_confirmations: [deploy] }
decisions:
  - { id: build, tool: echo, input: { message: built } }
  - { id: deploy, tool: echo, operation: deploy, input: { message: shipped } }
`;

const STOPPED_PLAN = `version: 1
guardrails: { max_steps: 1 }
decisions:
  - { id: first, tool: echo, input: { message: one } }
  - { id: second, tool: echo, input: { message: two } }
`;

let dir: string;
/** The folder of the stubs, first on the PATH of the commands pasted. */
let stubs: string;
/** A store whose path a shell must have quoted. */
let db: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-pasted-'));
  stubs = join(dir, 'bin');
  mkdirSync(stubs);
  db = join(dir, "it's my.db");
  writeFileSync(join(dir, 'confirm.plan.yaml'), CONFIRM_PLAN);
  writeFileSync(join(dir, 'stopped.plan.yaml'), STOPPED_PLAN);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** An executable shell script `name` among the stubs; returns its path. */
function stub(name: string, body: string): string {
  const path = join(stubs, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

/** A `leash` stub that runs leash itself, in the test's folder. */
function realLeash(): string {
  return stub('leash', `cd '${dir}' && exec '${process.execPath}' --import '${TSX}' '${BIN}' "$@"`);
}

/** Runs leash in this process as the script `bin` (a stub, or this test when none); what it printed. */
async function leash(argv: readonly string[], bin?: string): Promise<{ code: number; out: string }> {
  return leashIn(dir, [...argv, '--db', db], {
    env: { PATH: stubs, USER: 'alice' },
    ...(bin === undefined ? {} : { bin }),
  });
}

/** `command` pasted into bash as it is, with the stubs first on the PATH. */
function paste(command: string) {
  return spawnSync('bash', ['-c', command], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: `${stubs}:/usr/bin:/bin`, USER: 'alice', HOME: dir },
    timeout: 60_000,
  });
}

/** The arguments the printing stub got when `command` was pasted. */
function argsOf(command: string): string[] {
  const r = paste(command);
  expect(r.stderr).toBe('');
  return r.stdout.split('\0').slice(0, -1);
}

/** The command printed after `label` in `text`. */
function printedAfter(text: string, label: string): string {
  const line = text.split('\n').find((l) => l.includes(label));
  if (line === undefined) throw new Error(`no "${label}" in:\n${text}`);
  return line.slice(line.indexOf(label) + label.length).trim();
}

describe('how printed commands start', () => {
  /** A package whose bin is linked from `folder` as `leash`, as npm links it; returns the bin. */
  function linked(folder: string): string {
    const target = join(dir, 'pkg', 'leash.js');
    mkdirSync(join(dir, 'pkg'), { recursive: true });
    writeFileSync(target, '#!/usr/bin/env node\n', { mode: 0o755 });
    mkdirSync(folder, { recursive: true });
    symlinkSync(target, join(folder, 'leash'));
    return target;
  }

  it('with leash when the first leash on the PATH is this one', () => {
    const bin = linked(join(dir, 'global'));
    expect(invokedAs({ PATH: `${join(dir, 'none')}:${join(dir, 'global')}` }, bin, dir)).toBe('leash');
  });

  it('with npx leash when no leash is on the PATH', () => {
    const bin = linked(join(dir, 'global'));
    expect(invokedAs({ PATH: join(dir, 'none') }, bin, dir)).toBe(NPX_LEASH);
  });

  it('with npx leash when another leash comes first on the PATH', () => {
    const bin = linked(join(dir, 'global'));
    stub('leash', 'exit 0');
    expect(invokedAs({ PATH: `${stubs}:${join(dir, 'global')}` }, bin, dir)).toBe(NPX_LEASH);
  });

  it('with npx leash under npm, whose PATH holds node_modules/.bin folders a shell does not', () => {
    const folder = join(dir, 'project', 'node_modules', '.bin');
    const bin = linked(folder);
    expect(invokedAs({ PATH: folder, npm_command: 'exec' }, bin, dir)).toBe(NPX_LEASH);
  });
});

describe('a word of a printed command', () => {
  it('reaches the command unchanged through bash, whatever it holds', () => {
    const words = ['release', 'my plan', "it's", '$HOME', '`id`', '"q"', '*', '~', '-x', 'a;b', 'é', ''];
    expect(argsOf(`${stub('print', PRINT_ARGS)} ${words.map(shellWord).join(' ')}`)).toEqual(words);
  });
});

describe('the commands leash prints', () => {
  it('after a run that waits for a person: approve, deny and serve, with its store, as bash reads them', async () => {
    const { out } = await leash(['run', 'confirm.plan.yaml'], stub('leash', PRINT_ARGS));
    const id = /approval (\S+)$/m.exec(out)?.[1] as string;
    expect([
      argsOf(printedAfter(out, 'approve:')),
      argsOf(printedAfter(out, 'deny:')),
      argsOf(printedAfter(out, 'or open the dashboard:')),
    ]).toEqual([
      ['approve', id, '--by', 'alice', '--reason', 'looks right', '--db', db],
      ['deny', id, '--by', 'alice', '--reason', 'not now', '--db', db],
      ['serve', '--db', db],
    ]);
  });

  it('through npx when leash is not on the PATH', async () => {
    stub('npx', PRINT_ARGS);
    const { out } = await leash(['run', 'confirm.plan.yaml']);
    const id = /approval (\S+)$/m.exec(out)?.[1] as string;
    expect(argsOf(printedAfter(out, 'approve:'))).toEqual([
      'leash',
      'approve',
      id,
      '--by',
      'alice',
      '--reason',
      'looks right',
      '--db',
      db,
    ]);
  });

  it('approves when the approve command printed after a run is pasted as it is', async () => {
    const { out } = await leash(['run', 'confirm.plan.yaml'], realLeash());
    const pasted = paste(printedAfter(out, 'approve:'));
    expect([pasted.status, pasted.stdout]).toEqual([0, expect.stringContaining('approved ')]);
  });

  it('shows the work kept after a stop when its status command is pasted, for a plan id that begins with a dash', async () => {
    const { out } = await leash(['run', 'stopped.plan.yaml', '--id=-odd plan'], realLeash());
    const pasted = paste(printedAfter(out, 'the work done before the stop is kept:'));
    expect([pasted.status, pasted.stdout]).toEqual([0, expect.stringContaining('plan -odd plan: failed')]);
  });

  it('after an approval recorded without resuming: resume, as bash reads it', async () => {
    const bin = stub('leash', PRINT_ARGS);
    const { out } = await leash(['run', 'confirm.plan.yaml'], bin);
    const id = /approval (\S+)$/m.exec(out)?.[1] as string;
    const approved = await leash(['approve', id, '--by', 'bob', '--no-resume'], bin);
    expect(argsOf(printedAfter(approved.out, 'resume the plan with:'))).toEqual([
      'resume',
      'confirm',
      '--db',
      db,
    ]);
  });

  it('in a store without plans: run, as bash reads it', async () => {
    const store = new SqliteStore({ path: db });
    await store.migrate();
    await store.close();
    const { out } = await leash(['status'], stub('leash', PRINT_ARGS));
    expect(argsOf(printedAfter(out, 'start one with:'))).toEqual(['run', 'plan.yaml', '--db', db]);
  });

  it('in an MCP result waiting for a person: approve, as bash reads it', () => {
    const approval = { id: 'a1b2', expiresAt: '2026-12-01T10:00:00Z' } as Approval;
    const style: CommandStyle = { leash: 'leash', dbArg: dbArgument(db, dir) };
    stub('leash', PRINT_ARGS);
    const text = approvalText(approval, 'write_file', style);
    expect(argsOf(printedAfter(text, 'Approve it with:'))).toEqual([
      'approve',
      'a1b2',
      '--by',
      'alice',
      '--reason',
      'checked',
      '--db',
      db,
    ]);
  });

  it('on the dashboard: run on an empty plan list, and audit under a log too long to show, as bash reads them', async () => {
    stub('leash', PRINT_ARGS);
    const ctx = { now: 0, pending: 0, csrf: '', style: { leash: 'leash', dbArg: dbArgument(db, dir) } };
    const entry = {
      seq: 1,
      prev: '',
      hash: '',
      entry: { timestamp: '2026-11-30T10:00:00Z', event_type: 'step_allowed', details: {} },
    };
    const log = Array.from({ length: AUDIT_ROWS + 1 }, () => entry) as unknown as ChainedEntry[];
    const report = { ok: true, size: log.length, head: '' } as unknown as VerifyReport;
    const empty = textOf(await plansPage(ctx, []));
    const audit = textOf(await auditPage(ctx, 'my plan', log, { guard: null, result: null }, report));
    expect([
      argsOf(/start one with (.*)$/.exec(empty)?.[1] ?? ''),
      argsOf(/\(all: (.*?)\)/.exec(audit)?.[1] ?? ''),
    ]).toEqual([
      ['run', 'plan.yaml', '--db', db],
      ['audit', 'my plan', '--db', db],
    ]);
  });

  it('as examples in the help of every command: commands bash reads without a redirection from a placeholder', async () => {
    const commands = ['', 'run', 'status', 'audit', 'verify', 'checkpoints', 'prune', 'keygen', 'approvals'];
    const more = [
      'approve',
      'deny',
      'resume',
      'abandon',
      'serve',
      'mcp',
      'policy validate',
      'schema',
      'audit export',
    ];
    const examples: string[] = [];
    for (const name of [...commands, ...more]) {
      const { out } = await leash([...name.split(' ').filter(Boolean), '--help']);
      examples.push(
        ...out
          .split('\n')
          .filter((l) => l.startsWith('  $ '))
          .map((l) => l.slice(4)),
      );
    }
    const checked = examples.map((e) => [e, spawnSync('bash', ['-n', '-c', e]).status, /<\w/.test(e)]);
    expect(checked.filter(([, status, placeholder]) => status !== 0 || placeholder)).toEqual([]);
    expect(examples.every((e) => e.includes(`${NPX_LEASH} `))).toBe(true);
  });
});
