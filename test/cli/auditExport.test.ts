import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  canonicalJson,
  ManualClock,
  keyFingerprint,
  signCheckpoint,
  SqliteStore,
  type Checkpoint,
} from '../../src/index.js';
import { bundleCopy, pemPair, signedLog, verifyIn, type SignedLog } from '../support/auditExport.js';
import { leashIn } from '../support/cli.js';

// Each verification is a Node.js process of its own.
vi.setConfig({ testTimeout: 30_000 });

let log: SignedLog;
/** The bundle of both plans, exported once with the signing key. */
let bundle: string;

beforeAll(async () => {
  log = await signedLog();
  const r = await exportIn('bundle', 'release', 'other');
  expect(r.code).toBe(0);
  bundle = join(log.dir, 'bundle');
});

afterAll(() => rmSync(log.dir, { recursive: true, force: true }));

/** `leash audit export ...plans --out out` on the log's database, signing with its key. */
function exportIn(out: string, ...args: string[]) {
  return leashIn(log.dir, ['audit', 'export', ...args, '--out', out, '--db', log.db], { env: log.env });
}

/** A copy of the bundle with `edit` applied to the lines of one of its files. */
function tampered(file: string, edit: (lines: string[]) => string[]): string {
  const copy = bundleCopy(bundle);
  const lines = readFileSync(join(copy, file), 'utf8').trimEnd().split('\n');
  writeFileSync(join(copy, file), `${edit(lines).join('\n')}\n`);
  return copy;
}

/** The lines `leash audit export ...args --out -` prints, parsed. */
async function streamed(io: { clock?: ManualClock }, ...args: string[]): Promise<Record<string, unknown>[]> {
  const r = await leashIn(log.dir, ['audit', 'export', ...args, '--out', '-', '--db', log.db], io);
  expect(r.code).toBe(0);
  return r.out
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const lineOfSeq = (lines: string[], seq: number) =>
  lines.findIndex((l) => l.startsWith(`{"plan":"release","seq":${seq},`));

describe('leash audit export: a bundle verify.mjs checks with Node.js alone', () => {
  it('verifies an untouched bundle, printing the key fingerprint and a line per plan', () => {
    const r = verifyIn(bundleCopy(bundle));
    expect([r.code, r.out.split('\n')[0], r.out]).toEqual([
      0,
      `key ${keyFingerprint(log.keys.publicKey)} from public-key.pem in the bundle: compare this fingerprint with one you got from the log's owner`,
      expect.stringMatching(
        /^release: ok, seq 1\.\.14 \(14 entries\) chained; 3 checkpoints matched, signed$/m,
      ),
    ]);
    expect(r.out).toMatch(/^other: ok, seq 1\.\.1 \(1 entry\) chained/m);
  });

  it('names the seq of an entry with a flipped byte', () => {
    const copy = tampered('entries.jsonl', (lines) => {
      const i = lineOfSeq(lines, 7);
      lines[i] = (lines[i] as string).replace('"cost":0.25', '"cost":0.35');
      return lines;
    });
    const r = verifyIn(copy);
    expect([r.code, r.out]).toEqual([1, expect.stringContaining('FAILED release: seq 7: hash mismatch')]);
  });

  it('catches the last entry deleted against the checkpoint signed at export', () => {
    const r = verifyIn(
      tampered('entries.jsonl', (lines) => lines.filter((_, i) => i !== lineOfSeq(lines, 14))),
    );
    expect([r.code, r.out]).toEqual([
      1,
      expect.stringContaining('FAILED release: checkpoint size 14 but the log ends at 13'),
    ]);
  });

  it('names the first seq of two entries swapped', () => {
    const copy = tampered('entries.jsonl', (lines) => {
      const [five, six] = [lineOfSeq(lines, 5), lineOfSeq(lines, 6)];
      [lines[five], lines[six]] = [lines[six] as string, lines[five] as string];
      return lines;
    });
    const r = verifyIn(copy);
    expect([r.code, r.out]).toEqual([
      1,
      expect.stringContaining('FAILED release: seq 5: found seq 6 in its place'),
    ]);
  });

  it('refuses a checkpoint re-signed with another key, naming the trusted key', () => {
    const other = pemPair();
    const copy = tampered('checkpoints.jsonl', (lines) =>
      lines.map((l, i) =>
        i === 0 ? canonicalJson(signCheckpoint(JSON.parse(l) as Checkpoint, other.privateKey)) : l,
      ),
    );
    const r = verifyIn(copy);
    expect([r.code, r.out]).toEqual([
      1,
      expect.stringContaining(
        `FAILED release: checkpoint size 5 (2026-11-30T10:04:00.000Z): signature does not verify with key ${keyFingerprint(log.keys.publicKey)}`,
      ),
    ]);
  });

  it('refuses a bundle whose key and signatures were all replaced: its fingerprint is not the manifest’s', () => {
    const other = pemPair();
    const copy = tampered('checkpoints.jsonl', (lines) =>
      lines.map((l) => canonicalJson(signCheckpoint(JSON.parse(l) as Checkpoint, other.privateKey))),
    );
    writeFileSync(join(copy, 'public-key.pem'), other.publicKey);
    const r = verifyIn(copy);
    expect([r.code, r.out]).toEqual([
      1,
      expect.stringContaining(
        `FAILED the manifest names signing key ${keyFingerprint(log.keys.publicKey)}, not ${keyFingerprint(other.publicKey)}`,
      ),
    ]);
  });

  it('checks the signatures with the key passed as --public-key, not the bundle’s', () => {
    const trusted = join(log.dir, 'trusted.pub.pem');
    writeFileSync(trusted, log.keys.publicKey);
    const other = pemPair();
    const copy = tampered('checkpoints.jsonl', (lines) =>
      lines.map((l) => canonicalJson(signCheckpoint(JSON.parse(l) as Checkpoint, other.privateKey))),
    );
    writeFileSync(join(copy, 'public-key.pem'), other.publicKey);
    const manifest = readFileSync(join(copy, 'manifest.json'), 'utf8');
    writeFileSync(
      join(copy, 'manifest.json'),
      manifest.replace(keyFingerprint(log.keys.publicKey), keyFingerprint(other.publicKey)),
    );
    expect(verifyIn(copy).code).toBe(0);
    const r = verifyIn(copy, '--public-key', trusted);
    expect([r.code, r.out]).toEqual([
      1,
      expect.stringContaining(`signature does not verify with key ${keyFingerprint(log.keys.publicKey)}`),
    ]);
  });

  it('exits 2 naming a file the bundle lacks', () => {
    const copy = bundleCopy(bundle);
    rmSync(join(copy, 'entries.jsonl'));
    const r = verifyIn(copy);
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('no entries.jsonl at')]);
  });

  it('verifies a pruned log from the checkpoint it starts after', async () => {
    const pruned = await signedLog();
    const store = new SqliteStore({ path: pruned.db });
    await store.migrate();
    await store.pruneAuditLog('release', 5);
    await store.close();
    const out = join(pruned.dir, 'bundle');
    const args = ['audit', 'export', 'release', '--out', out, '--db', pruned.db];
    expect((await leashIn(pruned.dir, args, { env: pruned.env })).code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as {
      plans: { first_seq: number }[];
    };
    const r = verifyIn(bundleCopy(out));
    rmSync(pruned.dir, { recursive: true, force: true });
    expect([manifest.plans[0]?.first_seq, r.code, r.out]).toEqual([
      6,
      0,
      expect.stringContaining(
        'release: ok, seq 6..14 (9 entries) chained; 2 checkpoints matched, signed; starts after seq 5, anchored on its checkpoint',
      ),
    ]);
  });

  it('verifies an export --since a time, from the prev of its first entry, skipping older checkpoints', async () => {
    expect((await exportIn('since', 'release', '--since', '2026-11-30T10:06:00Z')).code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(log.dir, 'since/manifest.json'), 'utf8')) as {
      since: string;
      plans: { first_seq: number; prev: string }[];
    };
    const sixth = JSON.parse(
      readFileSync(join(bundle, 'entries.jsonl'), 'utf8').split('\n')[5] as string,
    ) as {
      hash: string;
    };
    const r = verifyIn(bundleCopy(join(log.dir, 'since')));
    expect([manifest.since, manifest.plans[0], r.code, r.out]).toEqual([
      '2026-11-30T10:06:00.000Z',
      expect.objectContaining({ first_seq: 7, prev: sixth.hash }),
      0,
      expect.stringContaining(
        'release: ok, seq 7..14 (8 entries) chained; 2 checkpoints matched, signed; starts after seq 6 from the prev the manifest gives; 1 checkpoint before the export skipped',
      ),
    ]);
  });

  it('reads --since as an age before now', async () => {
    const clock = new ManualClock(Date.parse('2026-11-30T10:15:00Z'));
    const lines = await streamed({ clock }, 'release', '--since', '5m', '--format', 'jsonl');
    expect(lines.map((l) => l['seq'])).toEqual([11, 12, 13, 14]);
  });
});

describe('leash audit export: lines for a log shipper or a SIEM', () => {
  it('writes one line per entry, with its plan, as --format jsonl', async () => {
    expect((await exportIn('lines', '--all', '--format', 'jsonl')).code).toBe(0);
    const lines = readFileSync(join(log.dir, 'lines/entries.jsonl'), 'utf8').trimEnd().split('\n');
    const plans = lines.map((l) => (JSON.parse(l) as { plan: string }).plan);
    expect([readdirSync(join(log.dir, 'lines')), plans.sort()]).toEqual([
      ['entries.jsonl'],
      ['other', ...Array<string>(14).fill('release')],
    ]);
  });

  it('streams the lines to stdout with --out -', async () => {
    const bundled = readFileSync(join(bundle, 'entries.jsonl'), 'utf8').trimEnd().split('\n');
    const lines = await streamed({}, 'other', '--format', 'jsonl');
    expect(lines).toEqual(bundled.slice(14).map((l) => JSON.parse(l) as unknown));
  });

  it('writes each entry as an OCSF API Activity event', async () => {
    const events = await streamed({}, 'release', '--format', 'ocsf');
    expect(events.map((e) => [e['class_uid'], e['category_uid'], e['type_uid']])).toEqual(
      events.map((e) => [6003, 6, 600300 + (e['activity_id'] as number)]),
    );
    expect(events[0]).toMatchObject({
      activity_id: 99,
      activity_name: 'budget_allowed',
      time: Date.parse('2026-11-30T10:00:00Z'),
      status_id: 1,
      status: 'Success',
      actor: { app_name: 'leash' },
      api: { operation: 'budget_allowed' },
      metadata: {
        version: '1.3.0',
        product: { name: 'leash', vendor_name: 'leash' },
        correlation_uid: 'release',
        log_name: 'leash audit',
      },
      unmapped: {
        plan: 'release',
        seq: 1,
        prev: '0'.repeat(64),
        guard_name: 'tool_budget',
        result: 'allowed',
      },
    });
  });

  it('maps the identity of the person who approved to the OCSF actor', async () => {
    const approved = (await streamed({}, 'release', '--format', 'ocsf')).at(-1);
    expect(approved).toMatchObject({
      activity_id: 3,
      api: { operation: 'confirmation_approved' },
      actor: { app_name: 'leash', user: { uid: 'ann', name: 'Ann' } },
      resources: [
        { type: 'leash plan', uid: 'release' },
        { type: 'leash approval', uid: 'a1' },
      ],
    });
  });
});

describe('leash audit export: what it refuses', () => {
  it('names a plan the store does not have, exit 2, and writes nothing', async () => {
    const r = await exportIn('missing', 'release', 'nope');
    expect([r.code, r.err, existsSync(join(log.dir, 'missing'))]).toEqual([
      2,
      expect.stringContaining('no plan "nope" in this store'),
      false,
    ]);
  });

  it('refuses a folder that is not empty', async () => {
    mkdirSync(join(log.dir, 'full'));
    writeFileSync(join(log.dir, 'full/notes.txt'), 'mine');
    const r = await exportIn('full', 'release');
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('is not empty')]);
  });

  it('replaces an earlier export with --force, and nothing else', async () => {
    expect((await exportIn('again', 'other')).code).toBe(0);
    expect((await exportIn('again', 'other', '--format', 'jsonl', '--force')).code).toBe(0);
    expect(readdirSync(join(log.dir, 'again'))).toEqual(['entries.jsonl']);
    const r = await exportIn('full', 'release', '--force');
    expect([r.code, r.err, readdirSync(join(log.dir, 'full'))]).toEqual([
      2,
      expect.stringContaining('holds files an export does not write (notes.txt)'),
      ['notes.txt'],
    ]);
  });

  it('refuses a public key that is not the signing key’s, and writes nothing', async () => {
    const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
    writeFileSync(join(log.dir, 'other.pub.pem'), other);
    const r = await exportIn('mismatch', 'release', '--public-key', 'other.pub.pem');
    expect([r.code, r.err, existsSync(join(log.dir, 'mismatch'))]).toEqual([
      2,
      expect.stringContaining('publicKey must be the public half of the signing key'),
      false,
    ]);
  });

  it('refuses a bundle to stdout', async () => {
    const r = await exportIn('-', 'release');
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('a bundle is a folder')]);
  });
});

describe('leash audit', () => {
  it('reads a plan named "export" with --plan', async () => {
    const dir = join(log.dir, 'named');
    mkdirSync(dir);
    const db = join(dir, 'leash.db');
    const store = new SqliteStore({ path: db });
    await store.migrate();
    const { AutonomyGuardrailService } = await import('../../src/index.js');
    await new AutonomyGuardrailService({ store }).configureGuardrails('export', { toolBudget: 1 });
    await new AutonomyGuardrailService({ store }).checkToolBudget('export', 0.5);
    await store.close();
    const r = await leashIn(dir, ['audit', '--plan', 'export', '--format', 'jsonl', '--db', db]);
    expect([r.code, JSON.parse(r.out) as unknown]).toEqual([
      0,
      expect.objectContaining({ seq: 1, event_type: 'budget_allowed' }),
    ]);
  });

  it('still reads a plan named as its argument', async () => {
    const r = await leashIn(log.dir, ['audit', 'other', '--format', 'jsonl', '--db', log.db]);
    expect([r.code, (JSON.parse(r.out) as { seq: number }).seq]).toEqual([0, 1]);
  });
});

describe('leash keygen', () => {
  it('prints the public key’s fingerprint, as verify.mjs prints it', async () => {
    const dir = join(log.dir, 'keys');
    mkdirSync(dir);
    const r = await leashIn(dir, ['keygen', 'signing']);
    const fingerprint = keyFingerprint(readFileSync(join(dir, 'signing.pub.pem'), 'utf8'));
    expect(r.out).toContain(`public key fingerprint (SHA-256): ${fingerprint}`);
  });
});
