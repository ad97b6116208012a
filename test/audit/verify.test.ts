import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuditEntryJson } from '../../src/audit/AuditEntry.js';
import {
  chainEntry,
  createCheckpoint,
  exportCheckpoints,
  GENESIS,
  parseCheckpoints,
  signCheckpoint,
  type ChainedEntry,
  type Checkpoint,
} from '../../src/audit/chain.js';
import {
  verifyAuditLog,
  type AuditLogSource,
  type FindingCode,
  type LogEntry,
  type VerifyReport,
} from '../../src/audit/verify.js';
import { GuardrailValidationError } from '../../src/errors.js';
import { T0, PLAN, keys, otherKeys, entry, chain } from '../support/chain.js';

/** An array-backed store. */
function source(log: readonly ChainedEntry[], checkpoints?: readonly Checkpoint[]): AuditLogSource {
  return {
    readAuditLog: async () => log,
    ...(checkpoints === undefined ? {} : { readCheckpoints: async () => checkpoints }),
  };
}

/** A store that streams its entries one by one. */
function streamed(log: readonly ChainedEntry[]): AuditLogSource {
  return {
    async *readAuditLog() {
      yield* log;
    },
  };
}

/** `log` with `seq`'s entry replaced by `change(entry)`, keeping its stored seq, prev and hash. */
function tamper(
  log: readonly ChainedEntry[],
  seq: number,
  change: (e: ChainedEntry) => ChainedEntry,
): ChainedEntry[] {
  return log.map((e) => (e.seq === seq ? change(e) : e));
}

/** `log` with the entry at `seq` rewritten by `forge`, and that entry and every later one re-hashed. */
function forgeAndRehash(log: readonly ChainedEntry[], seq: number, forge: AuditEntryJson): ChainedEntry[] {
  const out = log.slice(0, seq - 1);
  out.push(chainEntry(PLAN, out[out.length - 1] ?? null, forge));
  for (const e of log.slice(seq)) out.push(chainEntry(PLAN, out[out.length - 1] ?? null, e.entry));
  return out;
}

function signedCheckpoint(log: readonly ChainedEntry[], size = log.length): Checkpoint {
  return signCheckpoint(createCheckpoint(PLAN, log[size - 1] ?? null, T0 + 10_000), keys.privateKey);
}

function codes(report: VerifyReport): [FindingCode, number | undefined][] {
  return report.findings.map((f) => [f.code, f.seq]);
}

describe('verifyAuditLog', () => {
  const log = chain(50);

  describe('an intact log', () => {
    it('verifies ok with no findings', async () => {
      const report = await verifyAuditLog(source(log), PLAN);
      expect([report.ok, report.findings]).toEqual([true, []]);
    });

    it('reports its size and head', async () => {
      const report = await verifyAuditLog(source(log), PLAN);
      expect([report.planId, report.size, report.head]).toEqual([PLAN, 50, log[49]?.hash]);
    });

    it('verifies ok when streamed', async () => {
      expect((await verifyAuditLog(streamed(log), PLAN)).ok).toBe(true);
    });

    it('verifies ok against its own signed checkpoints', async () => {
      const checkpoints = [signedCheckpoint(log, 20), signedCheckpoint(log, 50)];
      const report = await verifyAuditLog(source(log, checkpoints), PLAN, { publicKey: keys.publicKey });
      expect(report.ok).toBe(true);
    });

    it('verifies ok when empty, with head GENESIS', async () => {
      const report = await verifyAuditLog(source([]), PLAN);
      expect([report.ok, report.size, report.head]).toEqual([true, 0, GENESIS]);
    });
  });

  describe('a log pruned by retention', () => {
    const kept = log.slice(20);

    it('verifies ok from a checkpoint of the last pruned entry, and says how far it was pruned', async () => {
      const report = await verifyAuditLog(source(kept, [signedCheckpoint(log, 20)]), PLAN, {
        publicKey: keys.publicKey,
      });
      expect([report.ok, report.prunedThrough, report.size]).toEqual([true, 20, 30]);
    });

    it('reports a log kept whole as pruned through 0', async () => {
      expect((await verifyAuditLog(source(log), PLAN)).prunedThrough).toBe(0);
    });

    it('is a SEQ_GAP and LINK_BROKEN without a checkpoint of the last pruned entry', async () => {
      const report = await verifyAuditLog(source(kept, [signedCheckpoint(log, 19)]), PLAN);
      expect([codes(report), report.prunedThrough]).toEqual([
        [
          ['SEQ_GAP', 1],
          ['LINK_BROKEN', 21],
        ],
        0,
      ]);
    });

    it('takes no anchor from a checkpoint whose signature fails', async () => {
      const forged = { ...signedCheckpoint(log, 20), ts: '2026-11-30T12:00:00.000Z' };
      const report = await verifyAuditLog(source(kept, [forged]), PLAN, { publicKey: keys.publicKey });
      expect(report.findings.map((f) => f.code)).toEqual(['BAD_SIGNATURE', 'SEQ_GAP', 'LINK_BROKEN']);
    });
  });

  describe('a changed entry', () => {
    it('is a HASH_MISMATCH at its seq when one byte of its details changed', async () => {
      const changed = tamper(log, 17, (e) => ({
        ...e,
        entry: { ...e.entry, details: { step: 17, limit: 101 } },
      }));
      expect(codes(await verifyAuditLog(source(changed), PLAN))).toEqual([['HASH_MISMATCH', 17]]);
    });

    it('is a HASH_MISMATCH when its result was flipped', async () => {
      const changed = tamper(log, 14, (e) => ({ ...e, entry: { ...e.entry, result: 'allowed' } }));
      expect(codes(await verifyAuditLog(source(changed), PLAN))).toEqual([['HASH_MISMATCH', 14]]);
    });

    it('breaks the next link when its stored hash was recomputed to match', async () => {
      const changed = tamper(log, 17, (e) => chainEntry(PLAN, log[15] ?? null, { ...e.entry, details: {} }));
      expect(codes(await verifyAuditLog(source(changed), PLAN))).toEqual([['LINK_BROKEN', 18]]);
    });

    it('is found in a streamed log too', async () => {
      const changed = tamper(log, 17, (e) => ({
        ...e,
        entry: { ...e.entry, details: { step: 17, limit: 101 } },
      }));
      expect(codes(await verifyAuditLog(streamed(changed), PLAN))).toEqual([['HASH_MISMATCH', 17]]);
    });
  });

  describe('a removed entry', () => {
    it('from the middle is a SEQ_GAP and a LINK_BROKEN', async () => {
      const removed = log.filter((e) => e.seq !== 25);
      expect(codes(await verifyAuditLog(source(removed), PLAN))).toEqual([
        ['SEQ_GAP', 25],
        ['LINK_BROKEN', 26],
      ]);
    });

    it('names a run of missing seqs once', async () => {
      const removed = log.filter((e) => e.seq < 20 || e.seq > 24);
      const report = await verifyAuditLog(source(removed), PLAN);
      expect(report.findings.filter((f) => f.code === 'SEQ_GAP').map((f) => f.message)).toEqual([
        'seqs 20..24 are missing',
      ]);
    });

    it('from the start is a SEQ_GAP at seq 1', async () => {
      expect(codes(await verifyAuditLog(source(log.slice(1)), PLAN))).toEqual([
        ['SEQ_GAP', 1],
        ['LINK_BROKEN', 2],
      ]);
    });

    it('from the end goes unnoticed without a checkpoint: what remains is a valid chain', async () => {
      expect((await verifyAuditLog(source(log.slice(0, 45)), PLAN)).ok).toBe(true);
    });

    it('from the end is TRUNCATED against a checkpoint beyond the new end', async () => {
      const report = await verifyAuditLog(source(log.slice(0, 45), [signedCheckpoint(log)]), PLAN, {
        publicKey: keys.publicKey,
      });
      expect(codes(report)).toEqual([['TRUNCATED', 50]]);
    });

    it('from the end is not TRUNCATED against a checkpoint within what remains', async () => {
      const report = await verifyAuditLog(source(log.slice(0, 45), [signedCheckpoint(log, 40)]), PLAN);
      expect(report.ok).toBe(true);
    });

    it('is TRUNCATED against a checkpoint when the whole log is gone', async () => {
      expect(codes(await verifyAuditLog(source([], [signedCheckpoint(log)]), PLAN))).toEqual([
        ['TRUNCATED', 50],
      ]);
    });
  });

  describe('reordered and repeated entries', () => {
    it('reports two swapped entries as one out-of-order seq and the links they break', async () => {
      const swapped = [...log];
      [swapped[9], swapped[10]] = [log[10] as ChainedEntry, log[9] as ChainedEntry];
      expect(codes(await verifyAuditLog(source(swapped), PLAN))).toEqual([
        ['SEQ_GAP', 10],
        ['LINK_BROKEN', 10],
        ['LINK_BROKEN', 11],
        ['LINK_BROKEN', 12],
      ]);
    });

    it('reports a duplicated entry as a SEQ_GAP', async () => {
      const duplicated = [...log.slice(0, 20), log[19] as ChainedEntry, ...log.slice(20)];
      const report = await verifyAuditLog(source(duplicated), PLAN);
      expect(report.findings.filter((f) => f.code === 'SEQ_GAP')).toEqual([
        { code: 'SEQ_GAP', seq: 20, message: 'seq 20 appears more than once' },
      ]);
    });

    it('reports a duplicated entry as a broken link, too', async () => {
      const duplicated = [...log.slice(0, 20), log[19] as ChainedEntry, ...log.slice(20)];
      const report = await verifyAuditLog(source(duplicated), PLAN);
      expect(report.findings.filter((f) => f.code === 'LINK_BROKEN').map((f) => f.seq)).toEqual([20]);
    });
  });

  describe('a forged entry whose followers were all re-hashed', () => {
    const forged = forgeAndRehash(log, 30, { ...(log[29] as ChainedEntry).entry, details: { step: 0 } });

    it('is a valid chain on its own', async () => {
      expect((await verifyAuditLog(source(forged), PLAN)).ok).toBe(true);
    });

    it('is a HASH_MISMATCH at the size of a signed checkpoint taken before the forgery', async () => {
      const report = await verifyAuditLog(source(forged, [signedCheckpoint(log)]), PLAN, {
        publicKey: keys.publicKey,
      });
      expect(codes(report)).toEqual([['HASH_MISMATCH', 50]]);
    });

    it('is caught by checkpoints exported earlier and passed back in', async () => {
      const exported = exportCheckpoints([signedCheckpoint(log, 40)]);
      const report = await verifyAuditLog(source(forged), PLAN, {
        publicKey: keys.publicKey,
        checkpoints: parseCheckpoints(exported),
      });
      expect(codes(report)).toEqual([['HASH_MISMATCH', 40]]);
    });

    it('cannot be caught by a checkpoint that ends before it', async () => {
      const report = await verifyAuditLog(source(forged), PLAN, { checkpoints: [signedCheckpoint(log, 29)] });
      expect(report.ok).toBe(true);
    });
  });

  describe('checkpoint signatures', () => {
    it('are BAD_SIGNATURE under the wrong public key', async () => {
      const report = await verifyAuditLog(source(log, [signedCheckpoint(log)]), PLAN, {
        publicKey: otherKeys.publicKey,
      });
      expect(codes(report)).toEqual([['BAD_SIGNATURE', undefined]]);
    });

    it('are BAD_SIGNATURE when missing and a public key is given', async () => {
      const unsigned = createCheckpoint(PLAN, log[49] ?? null, T0);
      const report = await verifyAuditLog(source(log, [unsigned]), PLAN, { publicKey: keys.publicKey });
      expect(codes(report)).toEqual([['BAD_SIGNATURE', undefined]]);
    });

    it('make a checkpoint untrusted for anything else when they fail', async () => {
      const report = await verifyAuditLog(source(log.slice(0, 45), [signedCheckpoint(log)]), PLAN, {
        publicKey: otherKeys.publicKey,
      });
      expect(report.findings.map((f) => f.code)).toEqual(['BAD_SIGNATURE']);
    });

    it('are not checked without a public key', async () => {
      const unsigned = createCheckpoint(PLAN, log[49] ?? null, T0);
      expect((await verifyAuditLog(source(log, [unsigned]), PLAN)).ok).toBe(true);
    });

    it('are reported once for a checkpoint held both by the store and by the caller', async () => {
      const cp = signedCheckpoint(log);
      const report = await verifyAuditLog(source(log, [cp]), PLAN, {
        publicKey: otherKeys.publicKey,
        checkpoints: [cp],
      });
      expect(report.findings).toHaveLength(1);
    });
  });

  describe('checkpoints', () => {
    it('are HASH_MISMATCH when their head is not the log hash at their size', async () => {
      const wrong = signCheckpoint(
        { ...createCheckpoint(PLAN, log[9] ?? null, T0), head: 'a'.repeat(64) },
        keys.privateKey,
      );
      const report = await verifyAuditLog(source(log), PLAN, {
        publicKey: keys.publicKey,
        checkpoints: [wrong],
      });
      expect(codes(report)).toEqual([['HASH_MISMATCH', 10]]);
    });

    it('of another plan are ignored, so one export can serve many plans', async () => {
      const other = chain(60, 'plan-2');
      const theirs = signCheckpoint(createCheckpoint('plan-2', other[59] ?? null, T0), keys.privateKey);
      const report = await verifyAuditLog(source(log), PLAN, { checkpoints: [theirs] });
      expect(report.ok).toBe(true);
    });

    it('that are malformed are refused, naming the field', async () => {
      const bad = { ...signedCheckpoint(log), head: 'nope' };
      await expect(verifyAuditLog(source(log), PLAN, { checkpoints: [bad] })).rejects.toMatchObject({
        name: 'GuardrailValidationError',
        field: 'checkpoints[0].head',
      });
    });
  });

  describe('an entry moved to another plan', () => {
    it('fails every entry of a log presented under another plan id', async () => {
      const report = await verifyAuditLog(source(log), 'plan-2');
      expect(report.findings.filter((f) => f.code === 'HASH_MISMATCH')).toHaveLength(50);
    });

    it('fails its hash when copied into another plan at the same seq', async () => {
      const theirs = chain(50, 'plan-2');
      const moved = theirs.map((e) => (e.seq === 10 ? { ...(log[9] as ChainedEntry), planId: 'plan-2' } : e));
      const report = await verifyAuditLog(source(moved), 'plan-2');
      expect(report.findings).toContainEqual(expect.objectContaining({ code: 'HASH_MISMATCH', seq: 10 }));
    });
  });

  describe('malformed entries', () => {
    /** A store whose row `seq` of `entries` cannot be decoded, and whose readAuditLog therefore refuses. */
    function withMalformedRow(entries: readonly ChainedEntry[], seq: number, hash?: string): AuditLogSource {
      const rows: LogEntry[] = entries.map((e) =>
        e.seq === seq
          ? { planId: PLAN, seq, prev: e.prev, hash: hash ?? e.hash, malformed: 'details are not valid JSON' }
          : e,
      );
      return {
        readAuditLog: () => Promise.reject(new Error('the store cannot decode every row')),
        readAuditRows: async () => rows,
      };
    }

    it('make an entry that is not plain JSON a MALFORMED_ENTRY at its seq instead of an exception', async () => {
      const broken = tamper(log, 5, (e) => ({ ...e, entry: { ...e.entry, details: { n: Number.NaN } } }));
      expect(codes(await verifyAuditLog(source(broken), PLAN))).toEqual([['MALFORMED_ENTRY', 5]]);
    });

    it('make a row the store could not decode a MALFORMED_ENTRY at its seq, its stored hash still linking', async () => {
      const report = await verifyAuditLog(withMalformedRow(log, 5), PLAN);
      expect([codes(report), report.size]).toEqual([[['MALFORMED_ENTRY', 5]], 50]);
    });

    it('say in the finding why the row cannot be read', async () => {
      const report = await verifyAuditLog(withMalformedRow(log, 5), PLAN);
      expect(report.findings[0]?.message).toContain('details are not valid JSON');
    });

    it('still verify the entries after a malformed row', async () => {
      const changed = tamper(log, 10, (e) => ({ ...e, entry: { ...e.entry, details: { step: 0 } } }));
      const report = await verifyAuditLog(withMalformedRow(changed, 5), PLAN);
      expect(codes(report)).toEqual([
        ['MALFORMED_ENTRY', 5],
        ['HASH_MISMATCH', 10],
      ]);
    });

    it('break the link after a malformed row whose stored hash was changed', async () => {
      const report = await verifyAuditLog(withMalformedRow(log, 5, 'f'.repeat(64)), PLAN);
      expect(codes(report)).toEqual([
        ['MALFORMED_ENTRY', 5],
        ['LINK_BROKEN', 6],
      ]);
    });

    it('make a malformed row at the size of a checkpoint one finding', async () => {
      const store = withMalformedRow(log, 10);
      const report = await verifyAuditLog(store, PLAN, { checkpoints: [signedCheckpoint(log, 10)] });
      expect(codes(report)).toEqual([['MALFORMED_ENTRY', 10]]);
    });

    it('make an entry holding a lone surrogate a MALFORMED_ENTRY, as RFC 8785 gives it no hash', async () => {
      const e = { ...entry(1).toJSON(), details: { note: 'dep\udc00loy' } };
      // The hash a writer that escaped the lone surrogate as \udc00 would have stored.
      const escaped = `{"entry":{"details":{"note":"dep\\udc00loy"},"event_type":"${e.event_type}","guard_name":"${e.guard_name}","result":"${e.result}","timestamp":"${e.timestamp}"},"plan":"${PLAN}","prev":"${GENESIS}","seq":1}`;
      const hash = createHash('sha256').update(escaped).digest('hex');
      const stored: ChainedEntry = { planId: PLAN, seq: 1, prev: GENESIS, hash, entry: e };
      const report = await verifyAuditLog(source([stored]), PLAN);
      expect(report.findings.map((f) => [f.code, f.seq, f.message.includes('cannot be hashed')])).toEqual([
        ['MALFORMED_ENTRY', 1, true],
      ]);
    });

    it('make a seq that is not a positive integer a SEQ_GAP', async () => {
      const broken = tamper(log, 5, (e) => ({ ...e, seq: 4.5 }));
      const report = await verifyAuditLog(source(broken), PLAN);
      expect(report.findings.map((f) => f.code)).toContain('SEQ_GAP');
    });

    it('fail closed when the store returns something that is not an entry', async () => {
      const broken = [...log.slice(0, 3), null as unknown as ChainedEntry, ...log.slice(3)];
      expect((await verifyAuditLog(source(broken), PLAN)).ok).toBe(false);
    });
  });

  describe('maxFindings', () => {
    it('keeps that many findings', async () => {
      const report = await verifyAuditLog(source(log), 'plan-2', { maxFindings: 5 });
      expect(report.findings).toHaveLength(5);
    });

    it('counts the findings it did not keep', async () => {
      const report = await verifyAuditLog(source(log), 'plan-2', { maxFindings: 5 });
      expect(report.omittedFindings).toBe(45);
    });

    it('leaves the report not ok even when it keeps none', async () => {
      expect((await verifyAuditLog(source(log), 'plan-2', { maxFindings: 0 })).ok).toBe(false);
    });
  });

  it('refuses an invalid plan id', async () => {
    await expect(verifyAuditLog(source(log), '')).rejects.toBeInstanceOf(GuardrailValidationError);
  });

  it('verifies a log of 100,000 entries', async () => {
    const big: ChainedEntry[] = [];
    let last: ChainedEntry | null = null;
    for (let i = 1; i <= 100_000; i++) {
      last = chainEntry(PLAN, last, entry(i));
      big.push(last);
    }
    const report = await verifyAuditLog(streamed(big), PLAN, { checkpoints: [signedCheckpoint(big)] });
    expect([report.ok, report.size]).toEqual([true, 100_000]);
  }, 60_000);
});
