// A signed audit log in a SQLite file, exported with `leash audit export`, and the bundle's verify.mjs
// run where no leash can be found: what the export tests start from.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvalRules, AutonomyGuardrailService, ManualClock, SqliteStore } from '../../src/index.js';
import { as, PEOPLE, REQUEST, T0 } from './team.js';

/** An Ed25519 key pair as the PEM files `leash keygen` writes. */
export function pemPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export interface SignedLog {
  readonly dir: string;
  readonly db: string;
  readonly keys: { privateKey: string; publicKey: string };
  /** The environment `leash` signs with: LEASH_SIGNING_KEY names the private key's file in `dir`. */
  readonly env: NodeJS.ProcessEnv;
}

/**
 * In a new folder: a SQLite store checkpointing every 5 entries, signed; plan `release` with 12 budget
 * checks a minute apart (seq 1..12), then a request for `deploy` (seq 13) that Ann, signed in with a
 * token, approves (seq 14); plan `other` with one check.
 */
export async function signedLog(): Promise<SignedLog> {
  const dir = mkdtempSync(join(tmpdir(), 'leash-export-'));
  const db = join(dir, 'leash.db');
  const keys = pemPair();
  writeFileSync(join(dir, 'signing.key.pem'), keys.privateKey, { mode: 0o600 });
  const store = new SqliteStore({ path: db, checkpoints: { every: 5, privateKey: keys.privateKey } });
  await store.migrate();
  for (const p of PEOPLE) await store.putPrincipal({ ...p, createdAt: new Date(T0).toISOString() });
  const clock = new ManualClock(T0);
  let n = 0;
  const service = new AutonomyGuardrailService({
    store,
    clock,
    ids: () => `a${++n}`,
    approvalRules: approvalRules({ deploy: { approvers: ['role:release'] } }),
  });
  await service.configureGuardrails('release', {
    toolBudget: 100,
    requiredConfirmations: ['deploy'],
    labels: { user: 'carol' },
  });
  for (let i = 0; i < 12; i++) {
    await service.checkToolBudget('release', 0.25);
    clock.advance(60_000);
  }
  await service.requestConfirmation('release', REQUEST);
  await service.approve('a1', as('ann', 'looks right'));
  await service.configureGuardrails('other', { toolBudget: 1 });
  await service.checkToolBudget('other', 0.5);
  await store.close();
  return { dir, db, keys, env: { LEASH_SIGNING_KEY: 'signing.key.pem' } };
}

/** A copy of the bundle `bundle` alone, in a new folder outside the repository. */
export function bundleCopy(bundle: string): string {
  const copy = join(mkdtempSync(join(tmpdir(), 'leash-auditor-')), 'bundle');
  cpSync(bundle, copy, { recursive: true });
  return copy;
}

/** Runs `node verify.mjs args` in `dir`, with no NODE_PATH or NODE_OPTIONS that could find leash. */
export function verifyIn(dir: string, ...args: string[]): { code: number | null; out: string; err: string } {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_PATH' && k !== 'NODE_OPTIONS'),
  );
  const r = spawnSync(process.execPath, ['verify.mjs', ...args], { cwd: dir, env, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
