import { createHash, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntryJson } from '../../src/audit/AuditEntry.js';
import {
  chainEntry,
  createCheckpoint,
  exportCheckpoints,
  GENESIS,
  parseCheckpoints,
  signCheckpoint,
  type ChainedEntry,
} from '../../src/audit/chain.js';
import { verifyAuditLog } from '../../src/audit/verify.js';
import { leashIn } from '../support/cli.js';
import { ManualClock } from '../../src/clock.js';
import { canonicalJson } from '../../src/json.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';

// docs/audit-log.md tells a third party how to verify a log without leash. Its worked example is checked
// here against the code, and against a verifier written from the page alone, so the page cannot drift.
const DOC = readFileSync(new URL('../../docs/audit-log.md', import.meta.url), 'utf8');
const PLAN = 'release';

/** The text of the page's code block whose info string ends with `name` (```text name). */
function block(name: string): string {
  const found = new RegExp(`^\`\`\`\\w+ ${name}\\n([\\s\\S]*?)\\n\`\`\`$`, 'm').exec(DOC);
  if (found === null) throw new Error(`docs/audit-log.md has no block named ${name}`);
  return found[1] as string;
}

/** The entry line of `leash audit --format jsonl`, as the page shows it. */
interface EntryLine extends AuditEntryJson {
  seq: number;
  prev: string;
  hash: string;
}

const line = (): EntryLine => JSON.parse(block('audit-jsonl')) as EntryLine;

/** The entry object of a line: every field but seq, prev and hash. */
function entryOf(l: EntryLine): AuditEntryJson {
  const { seq: _seq, prev: _prev, hash: _hash, ...entry } = l;
  return entry;
}

describe('docs/audit-log.md: the worked example is what leash writes', () => {
  let dir: string;
  let db: string;

  /** Runs `leash` in this process on the example's database; returns what it printed. */
  async function leash(...argv: string[]): Promise<string> {
    const { code, out } = await leashIn(dir, [...argv, '--db', db]);
    expect(code).toBe(0);
    return out;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leash-docs-'));
    db = join(dir, 'leash.db');
    const store = new SqliteStore({ path: db, checkpoints: { every: 1, privateKey: block('signing-key') } });
    await store.migrate();
    const clock = new ManualClock(Date.parse('2026-11-30T10:00:00.000Z'));
    const service = new AutonomyGuardrailService({ store, clock });
    await service.configureGuardrails(PLAN, { toolBudget: 5 });
    await service.checkToolBudget(PLAN, 0.25);
    await store.close();
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('shows the line leash audit --format jsonl prints', async () => {
    expect(await leash('audit', PLAN, '--format', 'jsonl')).toBe(`${block('audit-jsonl')}\n`);
  });

  it('shows the line leash checkpoints prints', async () => {
    expect(await leash('checkpoints', PLAN)).toBe(`${block('checkpoint-jsonl')}\n`);
  });
});

describe('docs/audit-log.md: the worked example agrees with the code', () => {
  it('gives canonicalJson’s text for the canonical JSON example', () => {
    expect(canonicalJson(JSON.parse(block('canonical-input')))).toBe(block('canonical-output'));
  });

  it('shows canonicalJson of { plan, seq, prev, entry } as the hashed text', () => {
    const l = line();
    expect(canonicalJson({ plan: PLAN, seq: l.seq, prev: l.prev, entry: entryOf(l) })).toBe(
      block('entry-canonical'),
    );
  });

  it('shows the seq, prev and hash chainEntry gives the first entry', () => {
    const chained = chainEntry(PLAN, null, entryOf(line()));
    expect([chained.seq, chained.prev, chained.hash]).toEqual([1, GENESIS, block('entry-hash')]);
  });

  it('shows the checkpoint signCheckpoint makes with the example key', () => {
    const l = line();
    const cp = createCheckpoint(PLAN, { seq: l.seq, hash: l.hash }, Date.parse(l.timestamp));
    expect(exportCheckpoints([signCheckpoint(cp, block('signing-key'))])).toBe(
      `${block('checkpoint-jsonl')}\n`,
    );
  });

  it('shows a log and checkpoint that verifyAuditLog finds sound with the example public key', async () => {
    const l = line();
    const stored: ChainedEntry = { planId: PLAN, seq: l.seq, prev: l.prev, hash: l.hash, entry: entryOf(l) };
    const report = await verifyAuditLog({ readAuditLog: () => Promise.resolve([stored]) }, PLAN, {
      publicKey: block('public-key'),
      checkpoints: parseCheckpoints(block('checkpoint-jsonl')),
    });
    expect([report.ok, report.size, report.head]).toEqual([true, 1, block('entry-hash')]);
  });
});

/**
 * RFC 8785 for the values of the example, written from the page and not from leash: keys sorted by
 * UTF-16 code units, no white space, strings and numbers as ECMAScript's JSON.stringify writes them.
 */
function jcs(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const sha256 = (text: string): string => createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

describe('docs/audit-log.md: the page alone is enough to verify the example', () => {
  it('gives the text its canonical JSON rules give for the canonical JSON example', () => {
    expect(jcs(JSON.parse(block('canonical-input')))).toBe(block('canonical-output'));
  });

  it('starts the log at seq 1 with a prev of 64 zeros', () => {
    expect([line().seq, line().prev]).toEqual([1, '0'.repeat(64)]);
  });

  it('hashes the canonical JSON of { plan, seq, prev, entry } rebuilt from the exported line', () => {
    const l = line();
    expect(jcs({ plan: PLAN, seq: l.seq, prev: l.prev, entry: entryOf(l) })).toBe(block('entry-canonical'));
  });

  it('gives the hash as SHA-256 of the hashed text in 64 lowercase hex digits', () => {
    expect(sha256(block('entry-canonical'))).toBe(block('entry-hash'));
    expect(block('entry-hash')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('shows the same hash in the exported line', () => {
    expect(line().hash).toBe(sha256(block('entry-canonical')));
  });

  it('writes the checkpoint line as canonical JSON', () => {
    const text = block('checkpoint-jsonl');
    expect(jcs(JSON.parse(text))).toBe(text);
  });

  it('signs the canonical JSON of the checkpoint without its signature', () => {
    const { signature: _signature, ...signed } = JSON.parse(block('checkpoint-jsonl')) as Record<
      string,
      unknown
    >;
    expect(jcs(signed)).toBe(block('checkpoint-signed'));
  });

  it('carries a base64 Ed25519 signature of 64 bytes that the public key verifies', () => {
    const { signature } = JSON.parse(block('checkpoint-jsonl')) as { signature: string };
    const bytes = Buffer.from(signature, 'base64');
    expect([signature.length, bytes.length, bytes.toString('base64')]).toEqual([88, 64, signature]);
    const message = Buffer.from(block('checkpoint-signed'), 'utf8');
    expect(verify(null, message, createPublicKey(block('public-key')), bytes)).toBe(true);
  });

  it('gives the signature plain Ed25519 makes with the example key', () => {
    const { signature } = JSON.parse(block('checkpoint-jsonl')) as { signature: string };
    const message = Buffer.from(block('checkpoint-signed'), 'utf8');
    expect(sign(null, message, createPrivateKey(block('signing-key'))).toString('base64')).toBe(signature);
  });

  it('names the exported entry as the checkpoint’s size and head', () => {
    const cp = JSON.parse(block('checkpoint-signed')) as { size: number; head: string; plan: string };
    expect([cp.plan, cp.size, cp.head]).toEqual([PLAN, line().seq, line().hash]);
  });

  it('gives the PEM private key holding the 32-byte key shown in hex', () => {
    const der = createPrivateKey(block('signing-key')).export({ format: 'der', type: 'pkcs8' });
    expect(der.subarray(-32).toString('hex')).toBe(block('signing-key-seed'));
  });

  it('gives the PEM public key of that private key', () => {
    const pub = createPublicKey(createPrivateKey(block('signing-key')));
    expect(pub.export({ format: 'pem', type: 'spki' })).toBe(`${block('public-key')}\n`);
  });
});
