// `leash audit export`: plans' audit logs as a bundle an auditor verifies offline, or as lines for a log
// shipper or a SIEM.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import {
  auditBundle,
  BUNDLE_FILES,
  entriesSince,
  entryLine,
  type PlanLog,
} from '../../audit/export/bundle.js';
import { ocsfEvent } from '../../audit/export/ocsf.js';
import { GuardrailError, invalid } from '../../errors.js';
import { parseIsoMs } from '../../iso.js';
import { safe } from '../format.js';
import { parseLifetime } from '../people.js';
import { packageVersion, plansOf, readFileText } from '../views.js';
import type { CliContext } from '../context.js';

/** What `--format jsonl` and `--format ocsf` write, in the folder. */
const LINES_FILE = { jsonl: BUNDLE_FILES.entries, ocsf: 'events.ocsf.jsonl' } as const;

/** Every file an export writes: `--force` replaces a folder that holds these alone. */
const EXPORT_FILES: ReadonlySet<string> = new Set([...Object.values(BUNDLE_FILES), LINES_FILE.ocsf]);

type Format = 'bundle' | 'jsonl' | 'ocsf';

interface ExportOptions {
  all?: boolean;
  out: string;
  since?: string;
  format: Format;
  publicKey?: string;
  force?: boolean;
  db?: string;
}

export function registerAuditExport(audit: Command, c: CliContext): void {
  const { io, json, print, printJson, withRunner, dbOption, jsonOption } = c;
  audit
    .command('export')
    .description(
      'export audit logs: a bundle an auditor verifies offline, or lines for a log shipper or a SIEM',
    )
    .argument('[plans...]', 'plan ids')
    .option('--all', 'every plan')
    .requiredOption('--out <dir>', 'folder to write (created); - writes jsonl or ocsf lines to stdout')
    .option(
      '--since <time>',
      'from the first entry recorded at or after: ISO-8601 with a zone, or an age (7d, 12h)',
    )
    .addOption(
      new Option(
        '--format <format>',
        'bundle: for an auditor; jsonl: one entry a line; ocsf: OCSF API Activity events',
      )
        .choices(['bundle', 'jsonl', 'ocsf'])
        .default('bundle'),
    )
    .option(
      '--public-key <file>',
      "the checkpoints' Ed25519 public key (default: derived from LEASH_SIGNING_KEY)",
    )
    .option('--force', 'replace a folder that holds an earlier export')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
A bundle holds manifest.json, entries.jsonl (each entry as stored, with its plan), checkpoints.jsonl,
public-key.pem when a key is known, and verify.mjs: \`node verify.mjs\` checks it all with Node.js alone
(exit 0 verified, 1 a check failed, 2 usage). With LEASH_SIGNING_KEY set, a checkpoint of each plan's last
entry is signed at export, so no entry can be cut from the bundle's end unseen.

Examples:
  $ ${c.leash} audit export release --out audit-2026-11
  $ ${c.leash} audit export --all --since 7d --format ocsf --out - > leash.ocsf.jsonl

The auditor then runs: node audit-2026-11/verify.mjs`,
    )
    .action(async (planIds: string[], o: ExportOptions) => {
      if (o.all === true && planIds.length > 0) throw usage('name plans or pass --all, not both');
      if (o.all !== true && planIds.length === 0) throw usage('name the plans to export, or pass --all');
      const toStdout = o.out === '-';
      if (toStdout && o.format === 'bundle')
        throw usage('a bundle is a folder: --out - writes only --format jsonl or ocsf');
      const out = resolve(io.cwd, o.out);
      if (!toStdout) checkOut(out, o.force === true);
      const since = o.since === undefined ? undefined : parseSince(o.since, c.clock.now());
      const publicKey =
        o.publicKey === undefined ? undefined : readFileText(resolve(io.cwd, o.publicKey), 'public key');
      const keyFile = o.format === 'bundle' ? io.env['LEASH_SIGNING_KEY'] : undefined;
      const privateKey = keyFile
        ? readFileText(resolve(io.cwd, keyFile), 'signing key (LEASH_SIGNING_KEY)')
        : undefined;

      await withRunner(o.db, async (_runner, store) => {
        const ids =
          o.all === true ? await plansOf(store, undefined) : await named(planIds, (id) => plansOf(store, id));
        const logs: PlanLog[] = [];
        for (const planId of ids) {
          logs.push({
            planId,
            entries: await store.readAuditLog(planId),
            checkpoints: await store.readCheckpoints(planId),
          });
        }
        const leashVersion = packageVersion();
        let files: Record<string, string>;
        if (o.format === 'bundle') {
          files = {
            ...auditBundle({
              plans: logs,
              exportedAt: c.clock.now(),
              leashVersion,
              since,
              publicKey,
              privateKey,
            }).files,
          };
        } else {
          let text = '';
          for (const log of logs) {
            for (const e of entriesSince(log.entries, since)) {
              const line =
                o.format === 'ocsf' ? ocsfEvent(log.planId, e, { leashVersion }) : entryLine(log.planId, e);
              text += `${JSON.stringify(line)}\n`;
            }
          }
          files = { [LINES_FILE[o.format]]: text };
        }
        if (toStdout) {
          io.stdout.write(Object.values(files).join(''));
          return;
        }
        writeAtomically(out, files);
        const entries = logs.reduce((n, log) => n + entriesSince(log.entries, since).length, 0);
        if (json) printJson({ out, format: o.format, plans: ids, entries, files: Object.keys(files).sort() });
        else {
          print(`exported ${entries} entries of ${ids.length} plan(s) to ${safe(out)} (${o.format})`);
          if (o.format === 'bundle') print(`verify it with: node ${safe(join(out, BUNDLE_FILES.verifier))}`);
        }
      });
    });
}

function usage(message: string): GuardrailError {
  return new GuardrailError('USAGE', message);
}

/** The plans named, each checked, once each, in the order given. */
async function named(ids: readonly string[], check: (id: string) => Promise<string[]>): Promise<string[]> {
  const unique = [...new Set(ids)];
  for (const id of unique) await check(id);
  return unique;
}

/** `--since`: an ISO-8601 date-time with a zone, or an age before now (7d, 12h, 30m, 3600s). */
export function parseSince(text: string, now: number): number {
  const ms = parseIsoMs(text);
  if (!Number.isNaN(ms)) return ms;
  if (/^\d+[a-z]$/i.test(text)) return now - parseLifetime(text, '--since') * 1000;
  invalid(
    '--since',
    'an ISO-8601 date-time with a time zone (2026-11-30T10:00:00Z) or an age (7d, 12h, 3600s)',
    text,
  );
}

/** Refuses a folder that is not empty, unless `force` and it holds nothing but an earlier export. */
function checkOut(out: string, force: boolean): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw usage(`--out ${out} is a file, not a folder`);
  const present = readdirSync(out);
  if (present.length === 0) return;
  if (!force)
    throw usage(`--out ${out} is not empty: choose another folder, or pass --force to replace an export`);
  const foreign = present.filter((name) => !EXPORT_FILES.has(name));
  if (foreign.length > 0)
    throw usage(
      `--out ${out} holds files an export does not write (${foreign.slice(0, 3).join(', ')}): not replacing it`,
    );
}

/**
 * Writes the files into a new folder beside `out`, then renames it to `out` (over an earlier export, which
 * is removed after): a failed export leaves no half bundle.
 */
function writeAtomically(out: string, files: Readonly<Record<string, string>>): void {
  const parent = dirname(out);
  mkdirSync(parent, { recursive: true });
  const partial = mkdtempSync(join(parent, `.${basename(out)}.partial-`));
  const earlier = `${partial}.earlier`;
  try {
    for (const [name, text] of Object.entries(files))
      writeFileSync(join(partial, name), text, { flag: 'wx' });
    if (existsSync(out)) renameSync(out, earlier);
    try {
      renameSync(partial, out);
    } catch (error) {
      if (existsSync(earlier)) renameSync(earlier, out);
      throw error;
    }
  } finally {
    rmSync(partial, { recursive: true, force: true });
    rmSync(earlier, { recursive: true, force: true });
  }
}
