import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, freshSchemaName, skipWithoutServer } from '../store/postgres-support.js';

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

  function leash(...args: string[]) {
    const r = spawnSync(process.execPath, ['--import', TSX, BIN, ...args, '--db', url.toString()], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
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
});
