// Packages the tests need but the project's own install must not hold (they ask for Node 22, which the
// project does not) live in a folder of their own: its package.json and package-lock.json pin them, and
// `npm ci --prefix` installs them there whenever they are missing or the lock changed. A stamp written
// once an install succeeded names the manifest and lock it installed, so an interrupted one is redone.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FolderApart {
  /** The folder: its package.json and package-lock.json pin what is installed there. */
  readonly dir: string;
  /** Where the packages are installed. */
  readonly modules: string;
  /** Installs from the lock unless that exact install is already there; throws when npm fails. */
  readonly install: () => void;
}

export function folderApart(options: {
  readonly dir: string;
  /** What the folder holds, for the messages: "ai 7". */
  readonly what: string;
  /** Who needs it, for the error when npm fails: "the AI SDK adapter's tests on ai 7". */
  readonly neededBy: string;
  /** Files under node_modules an install always has. */
  readonly has: readonly string[];
  /** npm ci's flags beyond the ones every folder gets. */
  readonly flags?: readonly string[];
}): FolderApart {
  const { dir, what, neededBy, has, flags = [] } = options;
  const modules = join(dir, 'node_modules');
  const stamp = join(modules, '.leash-installed');

  /** The digest of what an install depends on: the manifest and the lock. */
  const pinned = (): string => {
    const hash = createHash('sha256');
    for (const file of ['package.json', 'package-lock.json']) hash.update(readFileSync(join(dir, file)));
    return hash.digest('hex');
  };

  /** Whether the installed copy is the one the lock pins. */
  const installed = (): boolean =>
    has.every((file) => existsSync(join(modules, file))) &&
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8') === pinned();

  const install = (): void => {
    if (installed()) return;
    const digest = pinned();
    console.log(`installing ${what} into ${dir} (it asks for Node 22: npm may warn EBADENGINE here)`);
    const npm = spawnSync(
      'npm',
      ['ci', '--prefix', dir, ...flags, '--ignore-scripts', '--no-audit', '--no-fund'],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (npm.status !== 0) {
      throw new Error(
        `npm ci of ${dir} failed (${npm.error?.message ?? `exit ${npm.status}`}): ${neededBy} need it`,
      );
    }
    writeFileSync(stamp, digest);
  };

  return { dir, modules, install };
}
