import type { KeyObject } from 'node:crypto';
import { describeValue, invalid } from '../errors.js';
import { canonicalJson } from '../json.js';
import { validatePlanId } from '../ids.js';
import { entryHasher, GENESIS, type ChainedEntry, type MalformedEntry } from './chain.js';
import { checkpointSignatureValid, toPublicKey, validateCheckpoint, type Checkpoint } from './checkpoint.js';

/**
 * Where a verifier reads a plan's durable audit log. Stores implement it; an array, a cursor or a
 * paginated query all fit.
 */
export interface AuditLogSource {
  /** The plan's entries in seq order: all at once, or streamed. */
  readAuditLog(planId: string): Promise<readonly ChainedEntry[]> | AsyncIterable<ChainedEntry>;
  /**
   * The same entries with a row that cannot be decoded given as a {@link MalformedEntry} rather than
   * failing the read; a verifier reads this instead of `readAuditLog` when the source has it.
   */
  readAuditRows?(planId: string): Promise<readonly LogEntry[]> | AsyncIterable<LogEntry>;
  /** The checkpoints the store kept for the plan, if it keeps any. */
  readCheckpoints?(planId: string): Promise<readonly Checkpoint[]>;
}

/** An entry of a log as a verifier reads it. */
export type LogEntry = ChainedEntry | MalformedEntry;

export type FindingCode =
  'HASH_MISMATCH' | 'LINK_BROKEN' | 'SEQ_GAP' | 'TRUNCATED' | 'BAD_SIGNATURE' | 'MALFORMED_ENTRY';

/** One problem found in a log. `seq` is the position it concerns, when there is one. */
export interface Finding {
  readonly code: FindingCode;
  readonly seq?: number;
  readonly message: string;
}

export interface VerifyReport {
  /** True when nothing was found. */
  readonly ok: boolean;
  readonly planId: string;
  /** Number of entries read. */
  readonly size: number;
  /**
   * Seqs 1..prunedThrough were pruned by a retention setting: the log starts after a checkpoint whose head
   * is the first kept entry's `prev`. 0 for a log kept whole.
   */
  readonly prunedThrough: number;
  /** Stored hash of the last entry read; {@link GENESIS} for an empty log. */
  readonly head: string;
  /** Ordered by seq; findings without a seq (signatures, unreadable seqs) come first. */
  readonly findings: readonly Finding[];
  /** Findings beyond `maxFindings`, counted but not kept. */
  readonly omittedFindings: number;
}

export interface VerifyOptions {
  /** Ed25519 public key the checkpoints must be signed with; without one, signatures are not checked. */
  publicKey?: KeyObject | string | undefined;
  /**
   * Checkpoints kept apart from the store (e.g. read back with `parseCheckpoints`), checked together with
   * the source's own. Checkpoints of other plans are ignored, so one export can serve many plans.
   */
  checkpoints?: readonly Checkpoint[] | undefined;
  /** Findings kept in the report; the rest are only counted. Default 1000. */
  maxFindings?: number | undefined;
}

/** Default {@link VerifyOptions.maxFindings}. */
export const DEFAULT_MAX_FINDINGS = 1000;

interface Range {
  from: number;
  to: number;
}

/**
 * Verifies a plan's audit log as it streams by, holding one entry, the checkpoints and the list of missing
 * seqs at a time:
 * - every entry must be one (MALFORMED_ENTRY for a row the store could not decode, or an entry that is not
 *   plain JSON and so has no hash to recompute; its stored hash still links it to its neighbours);
 * - every hash is recomputed (HASH_MISMATCH when the stored one differs);
 * - every `prev` must be the stored hash of the entry read before it, GENESIS for the first (LINK_BROKEN);
 * - seqs must run 1..n with no gap, repeat or reordering (SEQ_GAP, once per problem);
 * - with a public key, every checkpoint must carry a valid signature (BAD_SIGNATURE; such a checkpoint is
 *   then not trusted for anything else);
 * - a checkpoint of size `s` needs the log to reach seq `s` (TRUNCATED otherwise), and entry `s` must hash
 *   to the checkpoint's head (HASH_MISMATCH at `s` otherwise). This catches a forged entry whose
 *   followers were all re-hashed, which is a valid chain on its own.
 *
 * A hash chain alone cannot show that entries were cut from the tail: what remains is a shorter valid
 * chain. Truncation is caught only against a checkpoint taken before it and kept where the truncating
 * party could not reach, so export checkpoints (`exportCheckpoints`) and pass them back in.
 *
 * Malformed checkpoints or options throw a GuardrailValidationError; a malformed entry is a finding, and
 * the entries after it are still verified.
 * @example
 * const report = await verifyAuditLog(store, 'plan-1', { publicKey, checkpoints: parseCheckpoints(text) });
 * if (!report.ok) console.error(report.findings);
 */
export async function verifyAuditLog(
  source: AuditLogSource,
  planId: string,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  validatePlanId(planId);
  const key = options.publicKey === undefined ? null : toPublicKey(options.publicKey);
  const maxFindings = options.maxFindings ?? DEFAULT_MAX_FINDINGS;
  if (!Number.isSafeInteger(maxFindings) || maxFindings < 0)
    invalid('maxFindings', 'an integer >= 0', maxFindings);
  const given = options.checkpoints ?? [];
  if (!Array.isArray(given)) invalid('checkpoints', 'an array of checkpoints', given);

  const findings: Finding[] = [];
  let omittedFindings = 0;
  const report = (code: FindingCode, seq: unknown, message: string): void => {
    if (findings.length >= maxFindings) {
      omittedFindings++;
      return;
    }
    findings.push(
      Object.freeze(
        typeof seq === 'number' && Number.isSafeInteger(seq) ? { code, seq, message } : { code, message },
      ),
    );
  };

  // Checkpoints by size: each is checked when the entry of that seq streams by.
  const bySize = new Map<number, Checkpoint[]>();
  const seen = new Set<string>();
  const stored = source.readCheckpoints === undefined ? [] : await source.readCheckpoints(planId);
  if (!Array.isArray(stored)) invalid('readCheckpoints()', 'an array of checkpoints', stored);
  const candidates: [unknown, string][] = [
    ...given.map((cp, i): [unknown, string] => [cp, `checkpoints[${i}].`]),
    ...stored.map((cp, i): [unknown, string] => [cp, `readCheckpoints()[${i}].`]),
  ];
  for (const [raw, field] of candidates) {
    const cp = validateCheckpoint(raw, field);
    if (cp.plan !== planId) continue;
    const id = canonicalJson(cp);
    if (seen.has(id)) continue;
    seen.add(id);
    if (key !== null && !checkpointSignatureValid(cp, key)) {
      report(
        'BAD_SIGNATURE',
        undefined,
        cp.signature === undefined
          ? `checkpoint of size ${cp.size} taken at ${cp.ts} is not signed`
          : `checkpoint of size ${cp.size} taken at ${cp.ts} has a signature the public key does not verify`,
      );
      continue;
    }
    // Size 0 has head GENESIS (validated) and holds for every log.
    if (cp.size === 0) continue;
    const list = bySize.get(cp.size);
    if (list === undefined) bySize.set(cp.size, [cp]);
    else list.push(cp);
  }
  const hash = entryHasher(planId);
  // Seqs skipped over so far, ascending; an entry arriving later for one of them is out of order.
  const missing: Range[] = [];
  let count = 0;
  let maxSeq = 0;
  let prevSeq: unknown = undefined;
  let prevHash: unknown = GENESIS;
  /** The last seq pruned from the log's start, vouched for by a checkpoint; 0 when nothing was. */
  let prunedThrough = 0;

  const visit = (ce: LogEntry): void => {
    count++;
    const {
      seq,
      prev,
      hash: storedHash,
      entry,
      malformed,
    } = typeof ce === 'object' && ce !== null
      ? (ce as Partial<ChainedEntry> & Partial<MalformedEntry>)
      : ({} as Partial<ChainedEntry> & Partial<MalformedEntry>);
    // Built only for a finding: formatting it for every entry would cost more than hashing.
    const where = (): string => `entry #${count} (seq ${describeValue(seq)})`;

    // A log pruned by a retention setting starts after a checkpoint: the checkpoint of the entry before
    // the first one kept vouches for everything up to it.
    if (count === 1 && typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 1) {
      const anchor = bySize.get(seq - 1)?.find((cp) => cp.head === prev);
      if (anchor !== undefined) {
        maxSeq = seq - 1;
        prevHash = prev;
        prunedThrough = seq - 1;
      }
    }

    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
      report('SEQ_GAP', undefined, `${where()}: seq must be an integer >= 1`);
    } else if (seq === maxSeq + 1) {
      maxSeq = seq;
    } else if (seq > maxSeq + 1) {
      missing.push({ from: maxSeq + 1, to: seq - 1 });
      maxSeq = seq;
    } else if (takeMissing(missing, seq)) {
      report('SEQ_GAP', seq, `seq ${seq} is out of order: it comes after seq ${describeValue(prevSeq)}`);
    } else {
      report('SEQ_GAP', seq, `seq ${seq} appears more than once`);
    }

    // Without an entry there is no hash to recompute: the stored one still links it to its neighbours.
    let computed: string | null = null;
    if (typeof malformed === 'string') {
      report('MALFORMED_ENTRY', seq, `${where()} cannot be read: ${malformed}`);
    } else {
      try {
        computed = hash(seq, prev, entry);
      } catch (e) {
        report('MALFORMED_ENTRY', seq, `${where()} cannot be hashed: ${(e as Error).message}`);
      }
    }
    if (computed !== null && computed !== storedHash) {
      const moved =
        typeof ce === 'object' && ce !== null && ce.planId !== planId
          ? ` (the entry names plan ${describeValue(ce.planId)})`
          : '';
      report(
        'HASH_MISMATCH',
        seq,
        `${where()}: stored hash ${describeValue(storedHash)} is not the hash of its content, ${computed}${moved}`,
      );
    }

    if (prev !== prevHash) {
      report(
        'LINK_BROKEN',
        seq,
        count === 1
          ? `${where()}: prev of the first entry must be GENESIS (or, for a pruned log, the head of a checkpoint of the entry before it), got ${describeValue(prev)}`
          : `${where()}: prev ${describeValue(prev)} is not the hash of the entry before it (seq ${describeValue(prevSeq)})`,
      );
    }

    if (typeof seq === 'number') {
      const cps = bySize.get(seq);
      // A malformed entry is already a finding at this seq.
      if (cps !== undefined && computed !== null) {
        for (const cp of cps) {
          if (computed !== cp.head) {
            report(
              'HASH_MISMATCH',
              seq,
              `${where()} hashes to ${computed}, but the checkpoint taken at ${cp.ts} says ${cp.head}`,
            );
          }
        }
      }
    }

    prevSeq = seq;
    prevHash = storedHash;
  };

  const rows = source.readAuditRows !== undefined;
  const entries =
    source.readAuditRows !== undefined ? source.readAuditRows(planId) : source.readAuditLog(planId);
  if (isAsyncIterable(entries)) {
    for await (const ce of entries) visit(ce);
  } else {
    const list: unknown = await entries;
    if (!Array.isArray(list)) {
      invalid(rows ? 'readAuditRows()' : 'readAuditLog()', 'an array or an async iterable of entries', list);
    }
    for (let i = 0; i < list.length; i++) visit(list[i] as LogEntry);
  }

  for (const { from, to } of missing) {
    report('SEQ_GAP', from, from === to ? `seq ${from} is missing` : `seqs ${from}..${to} are missing`);
  }
  for (const [size, cps] of bySize) {
    // A checkpoint inside the log whose entry is missing is already a SEQ_GAP; one of pruned entries
    // was checked when the log was pruned, and its anchor carries it.
    if (size <= maxSeq) continue;
    for (const cp of cps) {
      report(
        'TRUNCATED',
        size,
        `the checkpoint taken at ${cp.ts} covers ${size} entries, but the log ends at seq ${maxSeq}: entries were removed from its end`,
      );
    }
  }

  findings.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  return Object.freeze({
    ok: findings.length === 0 && omittedFindings === 0,
    planId,
    size: count,
    prunedThrough,
    head: count === 0 ? GENESIS : typeof prevHash === 'string' ? prevHash : '',
    findings: Object.freeze(findings),
    omittedFindings,
  });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<LogEntry> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function'
  );
}

/** Removes `seq` from the missing ranges; false when it was not missing (so it was seen before). */
function takeMissing(missing: Range[], seq: number): boolean {
  let lo = 0;
  let hi = missing.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const r = missing[mid] as Range;
    if (seq < r.from) hi = mid - 1;
    else if (seq > r.to) lo = mid + 1;
    else {
      if (r.from === r.to) missing.splice(mid, 1);
      else if (seq === r.from) r.from++;
      else if (seq === r.to) r.to--;
      else {
        missing.splice(mid + 1, 0, { from: seq + 1, to: r.to });
        r.to = seq - 1;
      }
      return true;
    }
  }
  return false;
}
