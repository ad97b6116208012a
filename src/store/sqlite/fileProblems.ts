// A SQLite file's directory, made when missing, and why the file cannot be opened or its directory made,
// in words: SQLite says only "unable to open database file", and Node a bare errno ("EACCES: permission
// denied, mkdir …").
import { accessSync, constants, mkdirSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { describeValue, GuardrailError } from '../../errors.js';

function statOf(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

function allowed(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** The nearest of `path` and its parents that exists. */
function nearestExisting(path: string): { path: string; stats: Stats } | null {
  for (let p = path; ; p = dirname(p)) {
    const stats = statOf(p);
    if (stats) return { path: p, stats };
    if (dirname(p) === p) return null;
  }
}

/** What the file system says against a SQLite file at `path`, or null when it sees nothing wrong. */
export function openProblem(path: string): string | null {
  const dir = dirname(path);
  const file = statOf(path);
  if (file?.isDirectory()) return `${describeValue(path)} is a directory, not a file`;
  const folder = statOf(dir);
  if (folder === null) return `its directory ${describeValue(dir)} does not exist`;
  if (!folder.isDirectory()) return `${describeValue(dir)} is not a directory`;
  if (file !== null && !allowed(path, constants.R_OK | constants.W_OK)) {
    return `no permission to read and write ${describeValue(path)}`;
  }
  // SQLite also creates the file's -wal and -shm companions beside it.
  if (!allowed(dir, constants.W_OK)) return `no permission to create files in ${describeValue(dir)}`;
  return null;
}

/** Why the directory `dir` could not be created, given the error mkdir threw. */
export function mkdirProblem(dir: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const existing = nearestExisting(dir);
  if (existing && !existing.stats.isDirectory()) {
    return `${describeValue(existing.path)} is a file, not a directory`;
  }
  const where = existing ? ` in ${describeValue(existing.path)}` : '';
  if (code === 'EACCES' || code === 'EPERM') return `no permission to create directories${where}`;
  if (code === 'EROFS') return `the file system${where} is read-only`;
  if (code === 'ENOSPC') return 'no space left on the device';
  return error instanceof Error ? error.message : describeValue(error);
}

/**
 * Creates the directory of the SQLite file at `path`, with its parents, when it is missing: SQLite creates
 * the file but not its directory.
 * @throws GuardrailError `STORE_UNAVAILABLE` naming the directory, the file and why it could not be made
 */
export function createDirectoryOf(path: string): void {
  const dir = dirname(path);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw new GuardrailError(
      'STORE_UNAVAILABLE',
      `SQLite store unavailable: cannot create the directory ${describeValue(dir)} for ${describeValue(path)}: ${mkdirProblem(dir, error)}`,
      { cause: error },
    );
  }
}
