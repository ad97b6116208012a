// ai 7, which the AI SDK adapter's tests also run on, asks for Node 22: it is installed here, in a
// folder of its own, so that the project's `npm ci` on Node 20 stays free of it. The vitest project
// `ai 7` installs it before its tests (this file is its global setup), and so does any test that needs
// it, whenever it is missing or its package-lock.json changed. Its peer zod is left out (--omit=peer):
// ai 7 resolves the project's copy, the one the tests build their schemas with.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This folder: its package.json and package-lock.json pin ai 7. */
export const AI7_DIR = dirname(fileURLToPath(import.meta.url));
/** Where ai 7 and its dependencies are installed. */
export const AI7_MODULES = join(AI7_DIR, 'node_modules');
/** Written once an install succeeded: the digest of the manifest and lock it installed. */
const STAMP = join(AI7_MODULES, '.leash-installed');

/** The digest of what an install depends on: the manifest and the lock. */
function pinned(): string {
  const hash = createHash('sha256');
  for (const file of ['package.json', 'package-lock.json']) hash.update(readFileSync(join(AI7_DIR, file)));
  return hash.digest('hex');
}

/** Whether the installed copy is the one the lock pins (an interrupted install has no stamp). */
export function ai7Installed(): boolean {
  return (
    existsSync(join(AI7_MODULES, 'ai/package.json')) &&
    existsSync(STAMP) &&
    readFileSync(STAMP, 'utf8') === pinned()
  );
}

/** Installs ai 7 from its lock unless that exact install is already there; throws when npm fails. */
export function installAi7(): void {
  if (ai7Installed()) return;
  const digest = pinned();
  console.log(`installing ai 7 into ${AI7_DIR} (it asks for Node 22: npm may warn EBADENGINE here)`);
  const npm = spawnSync(
    'npm',
    ['ci', '--prefix', AI7_DIR, '--omit=peer', '--ignore-scripts', '--no-audit', '--no-fund'],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (npm.status !== 0) {
    throw new Error(
      `npm ci of ${AI7_DIR} failed (${npm.error?.message ?? `exit ${npm.status}`}): the AI SDK adapter's tests on ai 7 need it`,
    );
  }
  writeFileSync(STAMP, digest);
}

/** The vitest global setup of the project `ai 7`. */
export function setup(): void {
  installAi7();
}
