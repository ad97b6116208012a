// verify.mjs, the verifier `leash audit export` writes into a bundle: a text kept here, so that it ships
// with the compiled package. It must run on Node.js alone (node:crypto, node:fs, node:path, node:url), and
// it implements docs/audit-log.md on its own: it shares no code with leash, so an auditor can read it
// whole. It holds no backtick and no dollar-brace, so it can sit in this raw template literal as written.

/** The text of verify.mjs. Imported as a module, it exports `canonicalJson`, `entryHash` and `verifyBundle`. */
export const VERIFY_MJS = String.raw`#!/usr/bin/env node
// verify.mjs: checks a leash audit bundle offline, with nothing but Node.js (18 or later).
//
//   node verify.mjs [DIR] [--public-key trusted.pem]
//
// DIR is the bundle (default: the folder this file is in). It recomputes every entry's hash, checks that
// each plan's entries run on with no gap and that each links to the one before it, checks each
// checkpoint's Ed25519 signature with the trusted key (default: the bundle's public-key.pem, whose
// fingerprint it prints for you to compare with one obtained from the log's owner) and that the log
// reaches each checkpoint with the checkpoint's head, and that the manifest's counts and ranges match.
//
// Exit codes: 0 every check passed; 1 a check failed (each failure names its plan and seq);
// 2 usage error: a missing file or a bad argument.
// The rules it checks are those of leash's docs/audit-log.md, written out here in full.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FORMAT = 'leash-audit-bundle';
export const FORMAT_VERSION = 1;
export const GENESIS = '0'.repeat(64);
const ENTRY_FIELDS = ['event_type', 'guard_name', 'result', 'timestamp', 'details'];
const LINE_FIELDS = ['plan', 'seq', 'prev', 'hash'].concat(ENTRY_FIELDS);
const CHECKPOINT_FIELDS = ['plan', 'size', 'head', 'ts', 'signature'];
const HEX64 = /^[0-9a-f]{64}$/;
const SIGNATURE = /^[A-Za-z0-9+/]{85}[AQgw]==$/;
const LONE_SURROGATE = /\p{Cs}/u;
const MAX_DEPTH = 64;

/** A usage error: exit 2. */
export class UsageError extends Error {}

/**
 * RFC 8785 canonical JSON: no white space, object keys sorted by UTF-16 code units at every level,
 * strings and numbers as ECMAScript's JSON.stringify writes them (-0 as 0). A lone surrogate is an error.
 */
export function canonicalJson(value) {
  return canonical(value, 0);
}

function canonical(value, depth) {
  if (depth > MAX_DEPTH) throw new Error('JSON nested deeper than ' + MAX_DEPTH + ' levels');
  if (value === null || value === true || value === false) return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('a number that is not finite: ' + String(value));
    return JSON.stringify(value);
  }
  if (typeof value === 'string') return quote(value);
  if (Array.isArray(value)) return '[' + value.map((v) => canonical(v, depth + 1)).join(',') + ']';
  if (typeof value === 'object') {
    // The default sort compares UTF-16 code units, as RFC 8785 asks.
    const keys = Object.keys(value).sort();
    return '{' + keys.map((k) => quote(k) + ':' + canonical(value[k], depth + 1)).join(',') + '}';
  }
  throw new Error('not a JSON value: ' + typeof value);
}

function quote(text) {
  if (LONE_SURROGATE.test(text)) throw new Error('a string holds a lone surrogate');
  return JSON.stringify(text);
}

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The hash of an entries.jsonl line: SHA-256 of canonicalJson({ plan, seq, prev, entry }). */
export function entryHash(line) {
  const entry = {};
  for (const field of ENTRY_FIELDS) entry[field] = line[field];
  return sha256(canonicalJson({ plan: line.plan, seq: line.seq, prev: line.prev, entry }));
}

/** SHA-256 of the key's SubjectPublicKeyInfo DER, hex. */
export function keyFingerprint(key) {
  return createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex');
}

function signatureValid(cp, key) {
  const signed = canonicalJson({ plan: cp.plan, size: cp.size, head: cp.head, ts: cp.ts });
  try {
    return verify(null, Buffer.from(signed, 'utf8'), key, Buffer.from(cp.signature, 'base64'));
  } catch {
    return false;
  }
}

function readText(path, what) {
  if (!existsSync(path)) throw new UsageError('no ' + what + ' at ' + path);
  return readFileSync(path, 'utf8');
}

function publicKeyOf(pem, where) {
  let key = null;
  if (pem.includes('-----BEGIN PUBLIC KEY-----')) {
    try {
      key = createPublicKey(pem);
    } catch {
      key = null;
    }
  }
  if (key === null || key.asymmetricKeyType !== 'ed25519') return where + ' is not an Ed25519 public key (PEM)';
  return key;
}

/** The JSON lines of a file: [line number, value or null when not JSON, text]. */
function jsonLines(text) {
  const out = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    let value = null;
    try {
      value = JSON.parse(line);
    } catch {
      value = null;
    }
    out.push([i + 1, value, line]);
  });
  return out;
}

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSeq = (v) => Number.isSafeInteger(v) && v >= 0;
const extraKeys = (o, allowed) => Object.keys(o).filter((k) => !allowed.includes(k));

/**
 * Verifies the bundle in dir. Returns { ok, lines, failures }: lines to print (the key, one summary per
 * plan), failures each naming what failed and where. Throws a UsageError for a missing file or a key that
 * cannot be read.
 */
export function verifyBundle(dir, options) {
  const publicKeyFile = options === undefined ? undefined : options.publicKey;
  const lines = [];
  const failures = [];
  const fail = (text) => failures.push(text);
  let manifest = null;
  try {
    manifest = JSON.parse(readText(join(dir, 'manifest.json'), 'manifest.json'));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    manifest = null;
  }
  if (!isObject(manifest) || manifest.format !== FORMAT) {
    throw new UsageError(join(dir, 'manifest.json') + ' is not the manifest of a leash audit bundle');
  }
  if (manifest.format_version !== FORMAT_VERSION) {
    throw new UsageError('the bundle has format version ' + String(manifest.format_version) + '; this verify.mjs reads version ' + FORMAT_VERSION);
  }
  const entriesText = readText(join(dir, 'entries.jsonl'), 'entries.jsonl');
  const checkpointsText = readText(join(dir, 'checkpoints.jsonl'), 'checkpoints.jsonl');

  // The trusted key.
  const listed = Array.isArray(manifest.signing_keys)
    ? manifest.signing_keys.map((k) => (isObject(k) ? k.fingerprint : undefined))
    : [];
  let key = null;
  let fingerprint = null;
  let source = null;
  if (publicKeyFile !== undefined) {
    key = publicKeyOf(readText(resolve(publicKeyFile), 'public key file'), publicKeyFile);
    if (typeof key === 'string') throw new UsageError(key);
    source = publicKeyFile + ' (--public-key)';
  } else if (existsSync(join(dir, 'public-key.pem'))) {
    key = publicKeyOf(readFileSync(join(dir, 'public-key.pem'), 'utf8'), 'public-key.pem');
    if (typeof key === 'string') {
      fail(key);
      key = null;
    }
    source = 'public-key.pem in the bundle: compare this fingerprint with one you got from the log\'s owner';
  }
  if (key !== null) {
    fingerprint = keyFingerprint(key);
    lines.push('key ' + fingerprint + ' from ' + source);
    if (listed.length > 0 && !listed.includes(fingerprint)) {
      fail('the manifest names signing key ' + listed.join(', ') + ', not ' + fingerprint);
    }
  } else if (listed.length > 0 && source === null) {
    fail('the manifest names signing key ' + listed.join(', ') + ', but the bundle has no public-key.pem (pass --public-key)');
  } else if (source === null) {
    lines.push('no public key: checkpoint signatures are not checked (pass --public-key FILE to check them)');
  }

  const plans = Array.isArray(manifest.plans) ? manifest.plans : [];
  const known = new Set(plans.map((p) => (isObject(p) ? p.plan : undefined)));

  // entries.jsonl, by plan.
  const entriesOf = new Map();
  for (const [n, line, text] of jsonLines(entriesText)) {
    const where = 'entries.jsonl line ' + n;
    if (!isObject(line)) {
      const seq = /"seq":(\d+)/.exec(text);
      fail(where + (seq === null ? '' : ' (seq ' + seq[1] + ')') + ': not a JSON object');
      continue;
    }
    const extra = extraKeys(line, LINE_FIELDS);
    const missing = LINE_FIELDS.filter((k) => !Object.hasOwn(line, k));
    if (extra.length > 0 || missing.length > 0) {
      const what = extra.length > 0 ? 'a field not hashed, ' + extra[0] : 'no ' + missing[0];
      fail(where + ' (seq ' + String(line.seq) + '): it has ' + what);
      continue;
    }
    if (!known.has(line.plan)) {
      fail(where + ': plan ' + JSON.stringify(line.plan) + ' is not in the manifest');
      continue;
    }
    if (!entriesOf.has(line.plan)) entriesOf.set(line.plan, []);
    entriesOf.get(line.plan).push(line);
  }

  // checkpoints.jsonl, by plan.
  const checkpointsOf = new Map();
  for (const [n, cp] of jsonLines(checkpointsText)) {
    const where = 'checkpoints.jsonl line ' + n;
    if (!isObject(cp) || extraKeys(cp, CHECKPOINT_FIELDS).length > 0 || typeof cp.plan !== 'string' ||
        !isSeq(cp.size) || !HEX64.test(String(cp.head)) || typeof cp.ts !== 'string' ||
        (cp.signature !== undefined && !SIGNATURE.test(String(cp.signature)))) {
      fail(where + ': not a checkpoint');
      continue;
    }
    if (!known.has(cp.plan)) {
      fail(where + ': plan ' + JSON.stringify(cp.plan) + ' is not in the manifest');
      continue;
    }
    if (!checkpointsOf.has(cp.plan)) checkpointsOf.set(cp.plan, []);
    checkpointsOf.get(cp.plan).push(cp);
  }

  for (const m of plans) {
    if (!isObject(m) || typeof m.plan !== 'string' || !isSeq(m.first_seq) || m.first_seq < 1 ||
        !isSeq(m.last_seq) || typeof m.prev !== 'string' || !HEX64.test(m.prev)) {
      fail('the manifest has a plan it does not describe: ' + JSON.stringify(m));
      continue;
    }
    const before = failures.length;
    const summary = verifyPlan(m, entriesOf.get(m.plan) || [], checkpointsOf.get(m.plan) || [], key, fingerprint, fail);
    if (failures.length === before) lines.push(m.plan + ': ok, ' + summary);
  }
  if (plans.length === 0) lines.push('the manifest lists no plan');
  return { ok: failures.length === 0, lines, failures };
}

/** Checks one plan; reports failures through fail and returns its summary. */
function verifyPlan(m, entries, checkpoints, key, fingerprint, fail) {
  const plan = m.plan;
  const first = m.first_seq;
  if (first === 1 && m.prev !== GENESIS) fail(plan + ': seq 1: its prev must be GENESIS (64 zeros)');
  // The chain, from the manifest's prev: the first break is reported, and nothing after it is trusted.
  const hashes = new Map();
  let expectedSeq = first;
  let expectedPrev = m.prev;
  let brokeAt = null;
  for (const e of entries) {
    const at = plan + ': seq ' + expectedSeq + ': ';
    if (e.seq !== expectedSeq) {
      fail(at + 'found seq ' + JSON.stringify(e.seq) + ' in its place: entries are missing, repeated or out of order');
    } else if (e.prev !== expectedPrev) {
      fail(at + 'prev does not link to ' + (expectedSeq === first ? 'the prev the manifest gives' : 'seq ' + (expectedSeq - 1)));
    } else {
      let computed = null;
      try {
        computed = entryHash(e);
      } catch (error) {
        fail(at + 'cannot be hashed: ' + error.message);
      }
      if (computed !== null && computed !== e.hash) fail(at + 'hash mismatch: the entry is not the one that was hashed');
      if (computed === e.hash) {
        hashes.set(expectedSeq, computed);
        expectedSeq++;
        expectedPrev = e.hash;
        continue;
      }
    }
    brokeAt = expectedSeq;
    break;
  }
  const lastPresent = entries.length === 0 ? first - 1 : entries[entries.length - 1].seq;

  // The manifest's counts and ranges.
  if (entries.length !== m.entries) {
    fail(plan + ': the manifest says ' + m.entries + ' entries, entries.jsonl holds ' + entries.length);
  }
  if (lastPresent !== m.last_seq) {
    fail(plan + ': the manifest says the log ends at seq ' + m.last_seq + ', entries.jsonl ends at seq ' + lastPresent);
  }
  if (checkpoints.length !== m.checkpoints) {
    fail(plan + ': the manifest says ' + m.checkpoints + ' checkpoints, checkpoints.jsonl holds ' + checkpoints.length);
  }

  // The checkpoints: signed by the trusted key, and met by the log.
  let matched = 0;
  let below = 0;
  let anchor = null;
  for (const cp of checkpoints) {
    const name = 'checkpoint size ' + cp.size + ' (' + cp.ts + ')';
    if (key !== null) {
      if (cp.signature === undefined) {
        fail(plan + ': ' + name + ' is not signed');
        continue;
      }
      if (!signatureValid(cp, key)) {
        fail(plan + ': ' + name + ': signature does not verify with key ' + fingerprint);
        continue;
      }
    }
    if (cp.size < first - 1) {
      below++;
    } else if (cp.size === first - 1) {
      if (cp.head === m.prev) anchor = cp.size;
      else fail(plan + ': ' + name + ': its head is not the prev of seq ' + first);
    } else if (cp.size > lastPresent) {
      fail(plan + ': checkpoint size ' + cp.size + ' but the log ends at ' + lastPresent + ': entries were removed from its end');
    } else if (brokeAt === null || cp.size < brokeAt) {
      if (hashes.get(cp.size) === cp.head) matched++;
      else fail(plan + ': seq ' + cp.size + ': its hash is not the head of ' + name);
    }
  }

  const range = entries.length === 0 ? 'no entries' : 'seq ' + first + '..' + lastPresent + ' (' + counted(entries.length, 'entry', 'entries') + ') chained';
  const signed = key === null ? ' (signatures not checked)' : ', signed';
  const parts = [range, counted(matched, 'checkpoint', 'checkpoints') + ' matched' + signed];
  if (first > 1) {
    parts.push(anchor === null
      ? 'starts after seq ' + (first - 1) + ' from the prev the manifest gives'
      : 'starts after seq ' + (first - 1) + ', anchored on its checkpoint');
  }
  if (below > 0) parts.push(counted(below, 'checkpoint', 'checkpoints') + ' before the export skipped');
  return parts.join('; ');
}

const counted = (n, one, many) => n + ' ' + (n === 1 ? one : many);

export function main(argv) {
  let dir;
  let publicKey;
  try {
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i];
      if (arg === '--help' || arg === '-h') {
        process.stdout.write('usage: node verify.mjs [DIR] [--public-key trusted.pem]\n');
        return 0;
      } else if (arg === '--public-key') {
        publicKey = argv[++i];
        if (publicKey === undefined) throw new UsageError('--public-key needs a file');
      } else if (arg.startsWith('--public-key=')) {
        publicKey = arg.slice('--public-key='.length);
      } else if (arg.startsWith('-')) {
        throw new UsageError('unknown option ' + arg);
      } else if (dir === undefined) {
        dir = arg;
      } else {
        throw new UsageError('one bundle folder only, got ' + dir + ' and ' + arg);
      }
    }
    const bundle = dir === undefined ? dirname(fileURLToPath(import.meta.url)) : resolve(dir);
    const report = verifyBundle(bundle, { publicKey });
    for (const line of report.lines) process.stdout.write(line + '\n');
    for (const failure of report.failures) process.stdout.write('FAILED ' + failure + '\n');
    process.stdout.write(report.ok ? 'verified\n' : counted(report.failures.length, 'check', 'checks') + ' failed\n');
    return report.ok ? 0 : 1;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write('verify.mjs: ' + error.message + '\nusage: node verify.mjs [DIR] [--public-key trusted.pem]\n');
    return 2;
  }
}

function isMain() {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) process.exitCode = main(process.argv.slice(2));
`;
