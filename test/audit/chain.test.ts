import { createHash, generateKeyPairSync, verify as cryptoVerify } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditEntry, type AuditEntryJson } from '../../src/audit/AuditEntry.js';
import {
  chainEntry,
  createCheckpoint,
  entryHash,
  exportCheckpoints,
  GENESIS,
  parseCheckpoints,
  signCheckpoint,
  verifyCheckpoint,
  type ChainedEntry,
  type Checkpoint,
} from '../../src/audit/chain.js';
import { canonicalJson } from '../../src/json.js';
import { fieldOf, thrown } from '../support/thrown.js';
import { T0, PLAN, keys, otherKeys, entry, chain } from '../support/chain.js';

/** The definition, computed without the library's hashing code. */
function referenceHash(plan: string, seq: number, prev: string, e: unknown): string {
  return createHash('sha256')
    .update(canonicalJson({ plan, seq, prev, entry: e }), 'utf8')
    .digest('hex');
}

function checkpointOf(log: readonly ChainedEntry[]): Checkpoint {
  return createCheckpoint(PLAN, log[log.length - 1] ?? null, T0 + 1000);
}

describe('entryHash', () => {
  it('is SHA-256 over the canonical JSON of plan, seq, prev and entry', () => {
    const json = entry(1).toJSON();
    expect(entryHash(PLAN, 1, GENESIS, json)).toBe(referenceHash(PLAN, 1, GENESIS, json));
  });

  it('does not depend on the order the entry keys were written in', () => {
    const json = entry(1).toJSON();
    const reordered = {
      timestamp: json.timestamp,
      details: { limit: 100, step: 1 },
      result: json.result,
      guard_name: json.guard_name,
      event_type: json.event_type,
    } as AuditEntryJson;
    expect(entryHash(PLAN, 1, GENESIS, reordered)).toBe(entryHash(PLAN, 1, GENESIS, json));
  });

  it('changes with the plan id', () => {
    const json = entry(1).toJSON();
    expect(entryHash('plan-2', 1, GENESIS, json)).not.toBe(entryHash(PLAN, 1, GENESIS, json));
  });

  it('changes with the seq', () => {
    const json = entry(1).toJSON();
    expect(entryHash(PLAN, 2, GENESIS, json)).not.toBe(entryHash(PLAN, 1, GENESIS, json));
  });

  it('changes with the previous hash', () => {
    const json = entry(1).toJSON();
    expect(entryHash(PLAN, 1, 'f'.repeat(64), json)).not.toBe(entryHash(PLAN, 1, GENESIS, json));
  });

  it('matches the definition for any JSON entry, including ones not shaped like an audit entry', () => {
    const field = fc.oneof(fc.string(), fc.constantFrom('step_allowed', 'step_limit', 'allowed', 'denied'));
    const anyEntry = fc.oneof(
      fc.record({
        event_type: field,
        guard_name: field,
        result: field,
        timestamp: field,
        details: fc.jsonValue(),
      }),
      fc.dictionary(fc.string(), fc.jsonValue()),
    );
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.integer({ min: 1 }),
        fc.string(),
        anyEntry,
        (plan, seq, prev, e) => {
          expect(entryHash(plan, seq, prev, e as AuditEntryJson)).toBe(referenceHash(plan, seq, prev, e));
        },
      ),
    );
  });

  it('matches the definition, hash or error, for entries with any UTF-16 strings, lone surrogates too', () => {
    // Halves of pairs, alone or meeting their other half, among ordinary characters.
    const text = fc.string({ unit: fc.constantFrom('a', 'é', '\ud83d', '\ude00', '\udbff', '\udfff') });
    const anyEntry = fc.record({
      event_type: fc.oneof(text, fc.constant('step_allowed')),
      guard_name: fc.constant('step_limit'),
      result: fc.constant('allowed'),
      timestamp: text,
      details: fc.oneof(fc.dictionary(text, fc.oneof(text, fc.integer())), fc.jsonValue()),
    });
    const outcome = (fn: () => string): string => {
      try {
        return fn();
      } catch (e) {
        // The reference hashes { plan, seq, prev, entry } as one value, so its paths start with "value.".
        return `error ${(e as Error).message.replaceAll('value.', '')}`;
      }
    };
    fc.assert(
      fc.property(text, anyEntry, (prev, e) => {
        expect(outcome(() => entryHash(PLAN, 1, prev, e as AuditEntryJson))).toBe(
          outcome(() => referenceHash(PLAN, 1, prev, e)),
        );
      }),
    );
  });

  it('refuses a detail holding a lone surrogate, naming it', () => {
    const json = { ...entry(1).toJSON(), details: { note: 'dep\udc00loy' } };
    expect(fieldOf(() => entryHash(PLAN, 1, GENESIS, json))).toBe('entry.details.note');
  });

  it('refuses a detail key holding a lone surrogate', () => {
    const json = { ...entry(1).toJSON(), details: { ['\ud800']: 1 } };
    expect(fieldOf(() => entryHash(PLAN, 1, GENESIS, json))).toBe('entry.details');
  });

  it('refuses a timestamp holding a lone surrogate', () => {
    const json = { ...entry(1).toJSON(), timestamp: '2026-01-01T00:00:00.000Z\udc00' };
    expect(fieldOf(() => entryHash(PLAN, 1, GENESIS, json))).toBe('entry.timestamp');
  });

  it('matches the definition for an entry whose event type disagrees with its guard name', () => {
    const forged = { ...entry(1).toJSON(), guard_name: 'tool_budget' } as AuditEntryJson;
    expect(entryHash(PLAN, 1, GENESIS, forged)).toBe(referenceHash(PLAN, 1, GENESIS, forged));
  });
});

describe('chainEntry', () => {
  it('starts a plan at seq 1 linked to GENESIS', () => {
    const first = chainEntry(PLAN, null, entry(1));
    expect([first.planId, first.seq, first.prev]).toEqual([PLAN, 1, GENESIS]);
  });

  it('links each entry to the one before it', () => {
    const [first, second] = chain(2) as [ChainedEntry, ChainedEntry];
    expect([second.seq, second.prev]).toEqual([2, first.hash]);
  });

  it('stores the entry in its wire form', () => {
    expect(chainEntry(PLAN, null, entry(1)).entry).toEqual(entry(1).toJSON());
  });

  it('stores the hash of its plan, seq, prev and entry', () => {
    const second = chain(2)[1] as ChainedEntry;
    expect(second.hash).toBe(referenceHash(PLAN, 2, second.prev, second.entry));
  });

  it('writes the hash as 64 lowercase hex digits', () => {
    expect(chainEntry(PLAN, null, entry(1)).hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('gives an entry and its JSON the same hash', () => {
    expect(chainEntry(PLAN, null, entry(1).toJSON()).hash).toBe(chainEntry(PLAN, null, entry(1)).hash);
  });

  it('returns a frozen entry', () => {
    const chained = chainEntry(PLAN, null, entry(1));
    expect(Object.isFrozen(chained) && Object.isFrozen(chained.entry)).toBe(true);
  });

  it('is unaffected by later changes to a JSON entry it was given', () => {
    const json = JSON.parse(JSON.stringify(entry(1).toJSON())) as { details: Record<string, unknown> };
    const chained = chainEntry(PLAN, null, json as unknown as AuditEntryJson);
    json.details['step'] = 99;
    expect(chained.hash).toBe(referenceHash(PLAN, 1, GENESIS, chained.entry));
  });

  it('chains an entry whose details nest as deep as an audit entry allows', () => {
    let details: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 31; i++) details = { a: details };
    const deep = AuditEntry.create({
      eventType: 'step_allowed',
      guardName: 'step_limit',
      timestamp: T0,
      details,
    });
    expect(chainEntry(PLAN, null, deep).hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses an invalid plan id', () => {
    expect(fieldOf(() => chainEntry('', null, entry(1)))).toBe('plan_id');
  });

  it('refuses a previous hash that is not 64 lowercase hex digits', () => {
    expect(fieldOf(() => chainEntry(PLAN, { seq: 1, hash: 'ABC' }, entry(2)))).toBe('previous.hash');
  });

  it('refuses a previous hash in upper case right after making its lower-case form', () => {
    const first = chainEntry(PLAN, null, entry(1));
    const upper = { seq: 1, hash: first.hash.toUpperCase() };
    expect(fieldOf(() => chainEntry(PLAN, upper, entry(2)))).toBe('previous.hash');
  });

  it('chains after the entry it made last without asking again what its hash is', () => {
    const first = chainEntry(PLAN, null, entry(1));
    expect(chainEntry(PLAN, first, entry(2)).prev).toBe(first.hash);
  });

  it('refuses a previous seq below 1', () => {
    expect(fieldOf(() => chainEntry(PLAN, { seq: 0, hash: GENESIS }, entry(2)))).toBe('previous.seq');
  });

  it('refuses a JSON entry with a key an audit entry does not have', () => {
    const json = { ...entry(1).toJSON(), extra: 1 } as AuditEntryJson;
    expect(fieldOf(() => chainEntry(PLAN, null, json))).toBe('entry.extra');
  });

  it('refuses a JSON entry whose result contradicts its event type', () => {
    const json = { ...entry(1).toJSON(), result: 'denied' } as AuditEntryJson;
    expect(fieldOf(() => chainEntry(PLAN, null, json))).toBe('entry.result');
  });

  it('refuses a JSON entry without a readable timestamp', () => {
    const json = { ...entry(1).toJSON(), timestamp: 'yesterday' } as AuditEntryJson;
    expect(fieldOf(() => chainEntry(PLAN, null, json))).toBe('entry.timestamp');
  });
});

describe('createCheckpoint', () => {
  it('records the size and head of the log it is given', () => {
    const log = chain(3);
    const cp = checkpointOf(log);
    expect([cp.plan, cp.size, cp.head]).toEqual([PLAN, 3, log[2]?.hash]);
  });

  it('writes the time as ISO-8601 UTC', () => {
    expect(checkpointOf(chain(1)).ts).toBe('2026-11-30T10:00:01.000Z');
  });

  it('gives an empty log size 0 and head GENESIS', () => {
    const cp = createCheckpoint(PLAN, null, T0);
    expect([cp.size, cp.head]).toEqual([0, GENESIS]);
  });
});

describe('signCheckpoint and verifyCheckpoint', () => {
  const cp = checkpointOf(chain(5));

  it('adds a base64 Ed25519 signature', () => {
    expect(signCheckpoint(cp, keys.privateKey).signature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
  });

  it('verifies a checkpoint signed with the matching key', () => {
    expect(verifyCheckpoint(signCheckpoint(cp, keys.privateKey), keys.publicKey)).toBe(true);
  });

  it('accepts both keys as PEM strings', () => {
    const privatePem = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const publicPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(verifyCheckpoint(signCheckpoint(cp, privatePem), publicPem)).toBe(true);
  });

  it('signs canonicalJson({ plan, size, head, ts }), so other Ed25519 tools can check it', () => {
    const signed = signCheckpoint(cp, keys.privateKey);
    const message = Buffer.from(canonicalJson({ plan: cp.plan, size: cp.size, head: cp.head, ts: cp.ts }));
    const signature = Buffer.from(signed.signature ?? '', 'base64');
    expect(cryptoVerify(null, message, keys.publicKey, signature)).toBe(true);
  });

  it('does not verify with another public key', () => {
    expect(verifyCheckpoint(signCheckpoint(cp, keys.privateKey), otherKeys.publicKey)).toBe(false);
  });

  it.each([
    ['plan', { plan: 'plan-2' }],
    ['size', { size: 4 }],
    ['head', { head: 'f'.repeat(64) }],
    ['ts', { ts: '2026-11-30T10:00:02.000Z' }],
  ])('does not verify once its %s is changed', (_field, change) => {
    const altered = { ...signCheckpoint(cp, keys.privateKey), ...change };
    expect(verifyCheckpoint(altered, keys.publicKey)).toBe(false);
  });

  it('does not verify an unsigned checkpoint', () => {
    expect(verifyCheckpoint(cp, keys.publicKey)).toBe(false);
  });

  it('does not verify a malformed checkpoint', () => {
    const malformed = { ...signCheckpoint(cp, keys.privateKey), size: -1 };
    expect(verifyCheckpoint(malformed, keys.publicKey)).toBe(false);
  });

  it('replaces a signature the checkpoint already had', () => {
    const resigned = signCheckpoint(signCheckpoint(cp, otherKeys.privateKey), keys.privateKey);
    expect(verifyCheckpoint(resigned, keys.publicKey)).toBe(true);
  });

  it('refuses to sign with a public key', () => {
    expect(fieldOf(() => signCheckpoint(cp, keys.publicKey))).toBe('privateKey');
  });

  it('refuses to verify with a key that is not Ed25519', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(fieldOf(() => verifyCheckpoint(cp, ec.publicKey))).toBe('publicKey');
  });

  it('does not repeat an unreadable key string in its error', () => {
    const secret = 'not-a-key-but-maybe-a-secret';
    expect(thrown(() => signCheckpoint(cp, secret)).message).not.toContain(secret);
  });

  it('refuses to sign a malformed checkpoint', () => {
    expect(fieldOf(() => signCheckpoint({ ...cp, head: 'nope' }, keys.privateKey))).toBe('checkpoint.head');
  });
});

describe('exportCheckpoints and parseCheckpoints', () => {
  const log = chain(4);
  const list = [
    signCheckpoint(createCheckpoint(PLAN, log[1] ?? null, T0 + 1), keys.privateKey),
    createCheckpoint(PLAN, log[3] ?? null, T0 + 2),
  ];

  it('writes one canonical JSON object per line, each ending in a newline', () => {
    expect(exportCheckpoints(list)).toBe(`${list.map((cp) => canonicalJson(cp)).join('\n')}\n`);
  });

  it('reads back what it wrote', () => {
    expect(parseCheckpoints(exportCheckpoints(list))).toEqual(list);
  });

  it('keeps signatures valid through a round trip', () => {
    const [first] = parseCheckpoints(exportCheckpoints(list)) as [Checkpoint];
    expect(verifyCheckpoint(first, keys.publicKey)).toBe(true);
  });

  it('exports an empty list as empty text', () => {
    expect(exportCheckpoints([])).toBe('');
  });

  it('skips blank lines and accepts CRLF line ends', () => {
    const text = `\r\n${exportCheckpoints(list).replaceAll('\n', '\r\n')}\n  \n`;
    expect(parseCheckpoints(text)).toEqual(list);
  });

  it('refuses to export a malformed checkpoint, naming its index and field', () => {
    const bad = { ...list[1], head: 'xyz' } as Checkpoint;
    expect(fieldOf(() => exportCheckpoints([list[0] as Checkpoint, bad]))).toBe('checkpoints[1].head');
  });

  it('names the line that is not JSON', () => {
    expect(fieldOf(() => parseCheckpoints(`${exportCheckpoints(list)}{oops\n`))).toBe('line 3');
  });

  it('names the line and field of a bad value', () => {
    const text = `${canonicalJson(list[1])}\n${canonicalJson({ ...list[1], size: -1 })}\n`;
    expect(fieldOf(() => parseCheckpoints(text))).toBe('line 2.size');
  });

  it('refuses a key that is not a checkpoint field, since the signature would not cover it', () => {
    expect(fieldOf(() => parseCheckpoints(canonicalJson({ ...list[0], note: 'x' })))).toBe('line 1.note');
  });

  it('refuses a missing field', () => {
    const { ts: _ts, ...rest } = list[1] as Checkpoint;
    expect(fieldOf(() => parseCheckpoints(canonicalJson(rest)))).toBe('line 1.ts');
  });

  it('refuses a signature that is not base64 of 64 bytes', () => {
    expect(fieldOf(() => parseCheckpoints(canonicalJson({ ...list[0], signature: 'abc=' })))).toBe(
      'line 1.signature',
    );
  });

  it('refuses a line that is not an object', () => {
    expect(fieldOf(() => parseCheckpoints('[1,2]\n'))).toBe('line 1');
  });

  it('refuses size 0 with a head other than GENESIS', () => {
    const text = canonicalJson({ plan: PLAN, size: 0, head: 'a'.repeat(64), ts: '2026-11-30T10:00:00Z' });
    expect(fieldOf(() => parseCheckpoints(text))).toBe('line 1.head');
  });
});
