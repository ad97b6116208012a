import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';

/**
 * A temporary folder for the tests of a file (or a describe block), removed after them, and what a test
 * opened there, closed after it, newest first. Call it where hooks may be registered.
 */
export function tempFiles(prefix: string): {
  /** A path for a new database file in the folder. */
  readonly newFile: () => string;
  /** Closes `close` once the test ends. */
  readonly closeAfter: (close: () => unknown) => void;
} {
  let dir = '';
  let files = 0;
  const cleanup: (() => unknown)[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    for (const close of cleanup.splice(0).reverse()) await close();
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    newFile: () => join(dir, `db-${files++}.db`),
    closeAfter: (close) => void cleanup.push(close),
  };
}
