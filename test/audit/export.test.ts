import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEntry } from '../../src/audit/AuditEntry.js';
import { chainEntry, createCheckpoint, signCheckpoint, type ChainedEntry } from '../../src/audit/chain.js';
import { auditBundle, entryLine } from '../../src/audit/export/bundle.js';
import { OCSF_ACTIVITY, ocsfEvent } from '../../src/audit/export/ocsf.js';
import { VERIFY_MJS } from '../../src/audit/export/verifier.js';
import { EVENT_INFO, type GuardrailEventType } from '../../src/events.js';
import { canonicalJson } from '../../src/json.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');

/** verify.mjs imported as a module, as an auditor's own script could. */
interface Verifier {
  canonicalJson(value: unknown): string;
  entryHash(line: Record<string, unknown>): string;
}

let dir: string;
let verifier: Verifier;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leash-verifier-'));
  writeFileSync(join(dir, 'verify.mjs'), VERIFY_MJS);
  verifier = (await import(pathToFileURL(join(dir, 'verify.mjs')).href)) as Verifier;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A log of `n` budget checks of `plan`, a minute apart. */
function logOf(plan: string, n: number): ChainedEntry[] {
  const log: ChainedEntry[] = [];
  for (let i = 0; i < n; i++) {
    const entry = AuditEntry.create({
      eventType: 'budget_allowed',
      guardName: 'tool_budget',
      timestamp: T0 + i * 60_000,
      details: { cost: 0.25, spent: 0.25 * (i + 1), limit: 5 },
    });
    log.push(chainEntry(plan, log.at(-1) ?? null, entry));
  }
  return log;
}

const TRICKY: readonly unknown[] = [
  { zeta: 'déjà vu', alpha: [1e21, 0.1, -0, 100], Beta: 'A\n' },
  { '\u00e9': 1, e: 2, E: 3, '\ud83d\ude00': 4, '\uff61': 5, '': 6, '10': 7, '9': 8 },
  ['\u0000\u001f\u007f', '\u2028\u2029', '"\\/', 'tab\there', '\ud83d\ude00'],
  [1e-7, 123456789012345680000, 5e-324, -1.5e300, 0.000001, 1e21, 1e20, -0],
  { a: { c: { e: [{ z: 1, y: [null, true, false] }] }, b: {} } },
  { __proto__: 1, constructor: { prototype: 2 } },
];

describe('verify.mjs', () => {
  it('writes the canonical JSON leash writes, on tricky values', () => {
    const values = TRICKY.map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    expect(values.map((v) => verifier.canonicalJson(v))).toEqual(values.map((v) => canonicalJson(v)));
  });

  it('refuses a lone surrogate, as RFC 8785 asks', () => {
    expect(() => verifier.canonicalJson({ key: 'half \ud800' })).toThrow('lone surrogate');
  });

  it('hashes an entries.jsonl line to the hash leash stored', () => {
    const log = logOf('release', 3);
    expect(log.map((e) => verifier.entryHash(entryLine('release', e)))).toEqual(log.map((e) => e.hash));
  });

  it('does nothing when imported, until it is run', () => {
    expect(process.exitCode ?? 0).toBe(0);
  });
});

describe('auditBundle', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const leashVersion = '0.1.0';

  it('records where an export --since starts: its first seq and that entry’s prev', () => {
    const entries = logOf('release', 10);
    const { manifest, files } = auditBundle({
      plans: [{ planId: 'release', entries, checkpoints: [] }],
      exportedAt: T0 + 3_600_000,
      leashVersion,
      since: T0 + 4 * 60_000,
    });
    expect([manifest.since, manifest.plans[0], files['entries.jsonl']?.split('\n').length]).toEqual([
      '2026-11-30T10:04:00.000Z',
      {
        plan: 'release',
        first_seq: 5,
        last_seq: 10,
        prev: entries[3]?.hash,
        entries: 6,
        checkpoints: 0,
        signed_at_export: false,
      },
      7,
    ]);
  });

  it('records an empty range after the log’s head when nothing is recent enough', () => {
    const entries = logOf('release', 3);
    const { manifest } = auditBundle({
      plans: [{ planId: 'release', entries, checkpoints: [] }],
      exportedAt: T0 + 3_600_000,
      leashVersion,
      since: T0 + 3_000_000,
    });
    expect(manifest.plans[0]).toMatchObject({
      first_seq: 4,
      last_seq: 3,
      prev: entries[2]?.hash,
      entries: 0,
    });
  });

  it('signs a checkpoint of the last entry at export when no stored one covers it', () => {
    const entries = logOf('release', 7);
    const stored = [signCheckpoint(createCheckpoint('release', entries[4] ?? null, T0), privateKey)];
    const { files, manifest } = auditBundle({
      plans: [{ planId: 'release', entries, checkpoints: stored }],
      exportedAt: T0 + 3_600_000,
      leashVersion,
      privateKey,
    });
    const sizes = (files['checkpoints.jsonl'] ?? '')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { size: number }).size);
    expect([sizes, manifest.plans[0]?.signed_at_export, manifest.signing_keys.length]).toEqual([
      [5, 7],
      true,
      1,
    ]);
  });

  it('adds no checkpoint when a stored one covers the last entry', () => {
    const entries = logOf('release', 5);
    const stored = [signCheckpoint(createCheckpoint('release', entries[4] ?? null, T0), privateKey)];
    const { manifest } = auditBundle({
      plans: [{ planId: 'release', entries, checkpoints: stored }],
      exportedAt: T0 + 3_600_000,
      leashVersion,
      privateKey,
    });
    expect([manifest.plans[0]?.checkpoints, manifest.plans[0]?.signed_at_export]).toEqual([1, false]);
  });

  it('writes no public key and names none without a key', () => {
    const { files, manifest } = auditBundle({
      plans: [{ planId: 'release', entries: logOf('release', 1), checkpoints: [] }],
      exportedAt: T0,
      leashVersion,
    });
    expect([Object.keys(files).sort(), manifest.signing_keys, manifest.files.public_key]).toEqual([
      ['checkpoints.jsonl', 'entries.jsonl', 'manifest.json', 'verify.mjs'],
      [],
      null,
    ]);
  });
});

describe('ocsfEvent', () => {
  const entryOf = (eventType: GuardrailEventType, details: Record<string, unknown>): ChainedEntry =>
    chainEntry(
      'release',
      null,
      AuditEntry.create({
        eventType,
        guardName: EVENT_INFO[eventType].guardName,
        timestamp: T0,
        details: details as never,
      }),
    );
  const event = (eventType: GuardrailEventType, details: Record<string, unknown> = {}) =>
    ocsfEvent('release', entryOf(eventType, details), { leashVersion: '0.1.0' });

  it('gives every event type an API Activity activity, and its type_uid', () => {
    const types = Object.keys(EVENT_INFO) as GuardrailEventType[];
    expect(types.map((t) => [OCSF_ACTIVITY[t], event(t).type_uid])).toEqual(
      types.map((t) => [expect.toBeOneOf([1, 3, 4, 99]), 600300 + OCSF_ACTIVITY[t]]),
    );
  });

  it('names a check that changes nothing Other, by its event type', () => {
    expect(event('step_allowed')).toMatchObject({
      activity_id: 99,
      activity_name: 'step_allowed',
      type_name: 'API Activity: Other',
    });
  });

  it('makes a denial a Failure with its reason', () => {
    expect(event('budget_blocked', { reason: 'over budget' })).toMatchObject({
      status_id: 2,
      status: 'Failure',
      status_detail: 'over budget',
      severity_id: 3,
    });
  });

  it('makes a name typed with --by the actor’s user name, with no uid', () => {
    expect(event('confirmation_approved', { by: 'alice' }).actor).toEqual({
      app_name: 'leash',
      user: { name: 'alice' },
    });
  });

  it('leaves the user out when the entry names no person', () => {
    expect(event('step_allowed').actor).toEqual({ app_name: 'leash' });
  });

  it('keeps the whole entry in unmapped, so it can still be hashed', () => {
    const e = entryOf('step_allowed', { step: 1 });
    const unmapped = ocsfEvent('release', e, { leashVersion: '0.1.0' }).unmapped;
    expect(verifier.entryHash(unmapped as Record<string, unknown>)).toBe(e.hash);
  });
});
