import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DATABASE_URL,
  freshApplicationName,
  freshSchemaName,
  lockRows,
  lockWaitOf,
  skipWithoutServer,
  terminateBackends,
  urlWithApplicationName,
} from '../store/postgres-support.js';

const skip = await skipWithoutServer('test/cli/cli-postgres.test.ts');

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
// Resolved here: the command runs in a temporary folder, where the package cannot be found by name.
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

describe.skipIf(skip)('leash with --db postgres://', () => {
  const schema = freshSchemaName();
  const url = new URL(DATABASE_URL);
  url.searchParams.set('schema', schema);
  const dir = mkdtempSync(join(tmpdir(), 'leash-cli-pg-'));
  copyFileSync(join(ROOT, 'examples/release.plan.yaml'), join(dir, 'release.plan.yaml'));

  /** The command line of `leash` with `args`, on the store of `db`. */
  function argv(args: readonly string[], db = url.toString()): string[] {
    return ['--import', TSX, BIN, ...args, '--db', db];
  }

  function leash(...args: string[]) {
    const r = spawnSync(process.execPath, argv(args), { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  /** `leash` with `args` started, its connections named `applicationName`; `exited` resolves at its end. */
  function leashStarted(applicationName: string, ...args: string[]) {
    const db = urlWithApplicationName(applicationName, url.toString());
    const child = spawn(process.execPath, argv(args, db), { cwd: dir });
    const out = { stdout: '', stderr: '' };
    child.stdout.setEncoding('utf8').on('data', (text: string) => (out.stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (out.stderr += text));
    const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.once('close', (code) => resolve({ code, ...out })),
    );
    /** Resolves with the match once stdout matches `pattern`; rejects when the command ends first. */
    const printed = (pattern: RegExp) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        const look = () => {
          const found = pattern.exec(out.stdout);
          if (found === null) return;
          child.stdout.off('data', look);
          resolve(found);
        };
        child.stdout.on('data', look);
        look();
        void exited.then((end) => reject(new Error(`leash ended first: ${JSON.stringify(end)}`)));
      });
    return { child, exited, printed };
  }

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('runs to the pause, approves from another process and completes, all in PostgreSQL', () => {
    const run = leash('run', 'release.plan.yaml', '--json');
    const id = (JSON.parse(run.stdout) as { approval: { id: string } }).approval.id;
    const approved = leash('approve', id, '--by', 'alice', '--json');
    const status = JSON.parse(leash('status', 'release', '--json').stdout) as { phase: string };
    expect([run.code, approved.code, status.phase]).toEqual([4, 0, 'completed']);
  }, 60_000);

  it('keeps the tables in the schema named in the URL', async () => {
    leash('status');
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    try {
      const found = await pool.query(
        "SELECT count(*)::integer AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'leash_plan_documents'",
        [schema],
      );
      expect(found.rows[0]?.n).toBe(1);
    } finally {
      await pool.end();
    }
  });

  describe('for a read-only command on a schema without leash tables', () => {
    const typo = freshSchemaName();
    const typoUrl = new URL(url);
    typoUrl.searchParams.set('schema', typo);

    function verifyTypo() {
      const r = spawnSync(process.execPath, argv(['verify', '--json'], typoUrl.toString()), {
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
      });
      return { code: r.status, stderr: r.stderr };
    }

    afterAll(async () => {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
      await pool.query(`DROP SCHEMA IF EXISTS "${typo}" CASCADE`);
      await pool.end();
    });

    it('exits 2 with STORE_NOT_FOUND, naming the store as its URL without a password', () => {
      const named = new URL(typoUrl);
      named.password = '';
      const r = verifyTypo();
      const error = r.stderr === '' ? {} : (JSON.parse(r.stderr) as { error: object }).error;
      expect([r.code, error]).toEqual([
        2,
        {
          code: 'STORE_NOT_FOUND',
          message: expect.stringContaining(`no leash database at ${named.toString()}:`),
        },
      ]);
    }, 60_000);

    it('creates no schema', async () => {
      verifyTypo();
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
      try {
        const found = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [typo]);
        expect(found.rowCount).toBe(0);
      } finally {
        await pool.end();
      }
    }, 60_000);
  });

  it('verifies every plan and reports a row that cannot be read as MALFORMED_ENTRY at its seq', async () => {
    writeFileSync(
      join(dir, 'echo.plan.yaml'),
      'version: 1\ndecisions:\n  - { id: one, tool: echo, input: { message: one } }\n',
    );
    leash('run', 'echo.plan.yaml');
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    try {
      await pool.query(
        `UPDATE "${schema}".leash_audit_entries SET details = '{not json' WHERE plan_id = 'echo' AND seq = 1`,
      );
    } finally {
      await pool.end();
    }
    const r = leash('verify', '--json');
    const reports = JSON.parse(r.stdout) as { planId: string; findings: { code: string; seq?: number }[] }[];
    const echo = reports.find((p) => p.planId === 'echo')?.findings.map((f) => [f.code, f.seq]);
    expect([r.code, echo]).toEqual([1, [['MALFORMED_ENTRY', 1]]]);
  }, 60_000);

  describe('when the server ends its connections', () => {
    const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });

    afterAll(async () => {
      await admin.end();
    });

    /**
     * Runs a plan whose first step waits until the test writes to a FIFO, so that the test knows when
     * the run is there; meanwhile another writer changes the plan, so the check recording the step locks
     * its row in a transaction, and waits, as the server ends the run's connections.
     */
    async function runCut(planId: string, ...flags: string[]) {
      const fifo = join(dir, 'go.fifo');
      if (!existsSync(fifo)) spawnSync('mkfifo', [fifo]);
      const applicationName = freshApplicationName();
      const run = leashStarted(applicationName, 'run', 'waits.plan.yaml', '--id', planId, ...flags);
      const writer = await open(fifo, 'w'); // opens once the first step reads it
      await admin.query(`UPDATE "${schema}"."leash_plans" SET guardrails = guardrails WHERE plan_id = $1`, [
        planId,
      ]);
      const lock = await lockRows(admin, `"${schema}"."leash_plans"`);
      try {
        await writer.close(); // the step ends; the check recording it waits for the lock
        await lockWaitOf(admin, applicationName);
        await terminateBackends(admin, applicationName);
      } finally {
        await lock.unlock();
      }
      return run.exited;
    }

    beforeAll(() => {
      writeFileSync(
        join(dir, 'waits.plan.yaml'),
        [
          'version: 1',
          'decisions:',
          '  - id: wait',
          '    tool: shell',
          '    input:',
          `      argv: [node, -e, "require('fs').readFileSync('go.fifo')"]`,
          '  - id: done',
          '    tool: echo',
          '    input: { message: done }',
          '',
        ].join('\n'),
      );
    });

    describe('while `leash run --json` records a step', () => {
      let ended: { code: number | null; stdout: string; stderr: string };

      beforeAll(async () => {
        ended = await runCut('waits', '--json');
      }, 60_000);

      it('ends the run with exit code 1 and its report', () => {
        const report = JSON.parse(ended.stdout) as { status: string };
        expect([ended.code, report.status]).toEqual([1, 'failed']);
      });

      it('names STORE_UNAVAILABLE in the report', () => {
        const report = JSON.parse(ended.stdout) as { outcome: { code: string } };
        expect(report.outcome.code).toBe('STORE_UNAVAILABLE');
      });

      it('says in the report that the store could not record the step', () => {
        const report = JSON.parse(ended.stdout) as { outcome: { reason: string } };
        expect(report.outcome.reason).toMatch(/could not update plan "waits": terminating connection/);
      });

      it('leaves a log that verifies', () => {
        const verified = leash('verify', 'waits', '--json');
        expect([verified.code, (JSON.parse(verified.stdout) as { ok: boolean }[])[0]?.ok]).toEqual([0, true]);
      }, 60_000);
    });

    it('prints the code of the error that ended the run when `leash run` records a step', async () => {
      const ended = await runCut('printed');
      expect(ended.stdout).toMatch(/failed \(STORE_UNAVAILABLE\): PostgresStore could not update plan/);
    }, 60_000);

    describe('while `leash serve` records an approval', () => {
      let answered: { status: number; text: string };
      let after: number;
      let ended: { code: number | null };

      beforeAll(async () => {
        const paused = leash('run', 'release.plan.yaml', '--id', 'served', '--json');
        const approvalId = (JSON.parse(paused.stdout) as { approval: { id: string } }).approval.id;
        const applicationName = freshApplicationName();
        const serve = leashStarted(applicationName, 'serve', '--port', '0');
        const [, address, token] = await serve.printed(/leash dashboard: (\S+)\/\?token=(\S+)/);
        const headers = { authorization: `Bearer ${token}` };
        const inbox = await (await fetch(`${address}/approvals`, { headers })).text();
        const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)?.[1] ?? '';
        const lock = await lockRows(admin, `"${schema}"."leash_plans"`);
        try {
          const approving = fetch(`${address}/approvals/${approvalId}/approve`, {
            method: 'POST',
            headers,
            body: new URLSearchParams({ csrf, by: 'alice' }),
            redirect: 'manual',
          });
          await lockWaitOf(admin, applicationName);
          await terminateBackends(admin, applicationName);
          const response = await approving;
          answered = { status: response.status, text: await response.text() };
        } finally {
          await lock.unlock();
        }
        after = (await fetch(`${address}/approvals`, { headers })).status;
        serve.child.kill('SIGTERM');
        ended = await serve.exited;
      }, 60_000);

      it('answers the request with 503 Service Unavailable', () => {
        expect(answered.status).toBe(503);
      });

      it('answers the request with the reason the approval was not recorded', () => {
        expect(answered.text).toMatch(/could not update plan &quot;served&quot;: terminating connection/);
      });

      it('answers the next request', () => {
        expect(after).toBe(200);
      });

      it('ends with exit code 0 when stopped', () => {
        expect(ended.code).toBe(0);
      });
    });
  });
});
