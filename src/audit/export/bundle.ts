import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { GuardrailValidationError, invalid } from '../../errors.js';
import { formatIso, isSerializableTimestamp, parseIsoMs } from '../../iso.js';
import { validatePlanId } from '../../ids.js';
import { GENESIS, type ChainedEntry } from '../chain.js';
import {
  createCheckpoint,
  exportCheckpoints,
  signCheckpoint,
  toPrivateKey,
  toPublicKey,
  type Checkpoint,
} from '../checkpoint.js';
import { VERIFY_MJS } from './verifier.js';

// An audit bundle: what an auditor takes away and verifies offline with the verify.mjs it holds.

/** The `format` of a bundle's manifest.json. */
export const BUNDLE_FORMAT = 'leash-audit-bundle';
/** The `format_version` of the manifests leash writes; verify.mjs refuses one it does not know. */
export const BUNDLE_FORMAT_VERSION = 1;

/** The files of a bundle, by what they hold. */
export const BUNDLE_FILES = Object.freeze({
  manifest: 'manifest.json',
  entries: 'entries.jsonl',
  checkpoints: 'checkpoints.jsonl',
  publicKey: 'public-key.pem',
  verifier: 'verify.mjs',
});

/** A plan's log as the store holds it (whole, or pruned), and the checkpoints the store kept of it. */
export interface PlanLog {
  readonly planId: string;
  /** Oldest first, as read from the store: never re-hashed. */
  readonly entries: readonly ChainedEntry[];
  readonly checkpoints: readonly Checkpoint[];
}

export interface AuditBundleOptions {
  readonly plans: readonly PlanLog[];
  /** When the bundle is made, epoch ms: the manifest's `exported_at`. */
  readonly exportedAt: number;
  /** The version of leash that made it. */
  readonly leashVersion: string;
  /** Keep the entries from the first one recorded at or after this time (epoch ms) on. */
  readonly since?: number | undefined;
  /** The Ed25519 public key the checkpoints are signed with: written as public-key.pem. */
  readonly publicKey?: KeyObject | string | undefined;
  /**
   * The signing key: its public half is the bundle's key when `publicKey` is not given (they must match
   * when both are), and each plan whose last entry no stored checkpoint covers gets one more checkpoint of
   * it, signed now, so that an entry cut from the end of the bundle is caught.
   */
  readonly privateKey?: KeyObject | string | undefined;
}

/** One plan in a bundle's manifest. */
export interface BundlePlan {
  readonly plan: string;
  /** The seq of the first entry exported; `last_seq + 1` when none is. */
  readonly first_seq: number;
  /** The seq of the last entry exported: the log's last. */
  readonly last_seq: number;
  /** The `prev` of entry `first_seq`: GENESIS for seq 1, else the hash of the entry before the export. */
  readonly prev: string;
  readonly entries: number;
  readonly checkpoints: number;
  /** True when the last checkpoint was signed at export time (no stored one covered the last entry). */
  readonly signed_at_export: boolean;
}

/** manifest.json. */
export interface BundleManifest {
  readonly format: typeof BUNDLE_FORMAT;
  readonly format_version: typeof BUNDLE_FORMAT_VERSION;
  readonly leash_version: string;
  readonly exported_at: string;
  /** The `since` cut, ISO-8601, or null for whole logs. */
  readonly since: string | null;
  readonly files: Readonly<Record<'entries' | 'checkpoints' | 'verifier', string>> & {
    readonly public_key: string | null;
  };
  readonly hash: Readonly<
    Record<'algorithm' | 'encoding' | 'canonicalization' | 'hashed' | 'genesis', string>
  >;
  readonly checkpoint_signature: Readonly<Record<'algorithm' | 'encoding' | 'signed', string>>;
  /** The keys the checkpoints are signed with, by fingerprint: {@link keyFingerprint}. */
  readonly signing_keys: readonly { readonly fingerprint: string; readonly file: string }[];
  readonly plans: readonly BundlePlan[];
}

export interface AuditBundle {
  readonly manifest: BundleManifest;
  /** Each file's name and text: write them all, or none. */
  readonly files: Readonly<Record<string, string>>;
}

/**
 * The fingerprint of an Ed25519 public key: SHA-256 of its SubjectPublicKeyInfo DER, as 64 lowercase hex
 * digits. `openssl pkey -pubin -in key.pub.pem -outform DER | sha256sum` prints the same.
 * @throws GuardrailValidationError when `publicKey` is not an Ed25519 key
 */
export function keyFingerprint(publicKey: KeyObject | string): string {
  const der = toPublicKey(publicKey).export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex');
}

/**
 * An entry as one line of entries.jsonl (and of `--format jsonl`): the plan id, then the entry as
 * `leash audit --format jsonl` prints it, as stored.
 */
export function entryLine(planId: string, e: ChainedEntry): Record<string, unknown> {
  return { plan: planId, seq: e.seq, prev: e.prev, hash: e.hash, ...e.entry };
}

/**
 * The entries from the first one recorded at or after `since` (epoch ms) on: a contiguous tail, so its
 * chain still verifies from the prev of its first entry. All of them without `since`.
 */
export function entriesSince(
  entries: readonly ChainedEntry[],
  since: number | undefined,
): readonly ChainedEntry[] {
  if (since === undefined) return entries;
  const first = entries.findIndex((e) => parseIsoMs(e.entry.timestamp) >= since);
  return first === -1 ? [] : entries.slice(first);
}

/**
 * A bundle of plans' audit logs for an auditor: manifest.json, entries.jsonl (each entry as stored, with
 * its plan id), checkpoints.jsonl (canonical lines, as `exportCheckpoints` writes), public-key.pem when a
 * key is known, and verify.mjs, a verifier that needs Node.js and nothing else.
 * @example
 * const { files } = auditBundle({ plans: [{ planId, entries, checkpoints }], exportedAt: Date.now(),
 *   leashVersion: '0.1.0', publicKey: pem });
 * @throws GuardrailValidationError for a bad option, or keys that do not match
 */
export function auditBundle(options: AuditBundleOptions): AuditBundle {
  if (!isSerializableTimestamp(options.exportedAt))
    invalid('exportedAt', 'epoch milliseconds', options.exportedAt);
  if (options.since !== undefined && !isSerializableTimestamp(options.since))
    invalid('since', 'epoch milliseconds', options.since);
  const signer = options.privateKey === undefined ? null : toPrivateKey(options.privateKey);
  const publicKey = bundleKey(options.publicKey, signer);
  const exportedAt = formatIso(options.exportedAt);
  let entries = '';
  let checkpoints = '';
  const plans: BundlePlan[] = [];
  for (const log of options.plans) {
    validatePlanId(log.planId);
    const kept = entriesSince(log.entries, options.since);
    const last = log.entries.at(-1) ?? null;
    for (const e of kept) entries += `${JSON.stringify(entryLine(log.planId, e))}\n`;
    const tail = tailCheckpoint(log, last, signer, options.exportedAt);
    const cps = tail === null ? log.checkpoints : [...log.checkpoints, tail];
    checkpoints += exportCheckpoints(cps);
    const first = kept[0];
    plans.push({
      plan: log.planId,
      first_seq: first?.seq ?? (last?.seq ?? 0) + 1,
      last_seq: last?.seq ?? 0,
      prev: first?.prev ?? last?.hash ?? GENESIS,
      entries: kept.length,
      checkpoints: cps.length,
      signed_at_export: tail !== null,
    });
  }
  const manifest: BundleManifest = {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    leash_version: options.leashVersion,
    exported_at: exportedAt,
    since: options.since === undefined ? null : formatIso(options.since),
    files: {
      entries: BUNDLE_FILES.entries,
      checkpoints: BUNDLE_FILES.checkpoints,
      public_key: publicKey === null ? null : BUNDLE_FILES.publicKey,
      verifier: BUNDLE_FILES.verifier,
    },
    hash: {
      algorithm: 'sha256',
      encoding: 'hex, lowercase',
      canonicalization: 'RFC 8785 (JSON Canonicalization Scheme)',
      hashed:
        'the UTF-8 bytes of the canonical JSON of {"plan","seq","prev","entry"}, entry being {"event_type","guard_name","result","timestamp","details"} of the line',
      genesis: GENESIS,
    },
    checkpoint_signature: {
      algorithm: 'Ed25519 (RFC 8032, pure)',
      encoding: 'base64',
      signed: 'the UTF-8 bytes of the canonical JSON (RFC 8785) of {"plan","size","head","ts"}',
    },
    signing_keys:
      publicKey === null ? [] : [{ fingerprint: keyFingerprint(publicKey), file: BUNDLE_FILES.publicKey }],
    plans,
  };
  const files: Record<string, string> = {
    [BUNDLE_FILES.manifest]: `${JSON.stringify(manifest, null, 2)}\n`,
    [BUNDLE_FILES.entries]: entries,
    [BUNDLE_FILES.checkpoints]: checkpoints,
    [BUNDLE_FILES.verifier]: VERIFY_MJS,
  };
  if (publicKey !== null)
    files[BUNDLE_FILES.publicKey] = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { manifest, files };
}

/** The bundle's public key: the one given, else the signer's public half; null without either. */
function bundleKey(given: KeyObject | string | undefined, signer: KeyObject | null): KeyObject | null {
  const key = given === undefined ? null : toPublicKey(given);
  const derived = signer === null ? null : createPublicKey(signer);
  if (key !== null && derived !== null && keyFingerprint(key) !== keyFingerprint(derived)) {
    throw new GuardrailValidationError(
      'publicKey',
      'publicKey must be the public half of the signing key: the checkpoints signed with one would not verify with the other',
    );
  }
  return key ?? derived;
}

/** A checkpoint of the log's last entry signed now, when a key is at hand and no stored one covers it. */
function tailCheckpoint(
  log: PlanLog,
  last: ChainedEntry | null,
  signer: KeyObject | null,
  now: number,
): Checkpoint | null {
  if (signer === null || last === null) return null;
  if (
    log.checkpoints.some((cp) => cp.size === last.seq && cp.head === last.hash && cp.signature !== undefined)
  )
    return null;
  return signCheckpoint(createCheckpoint(log.planId, last, now), signer);
}
