import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/cli/openStore.js';
import { mkdirProblem } from '../../src/store/sqlite/fileProblems.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-open-store-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('openStore on a SQLite file', () => {
  it('says which part of the path is a file when the directory cannot be created', async () => {
    writeFileSync(join(dir, 'state'), '');
    await expect(openStore('state/sub/leash.db', dir, {})).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `SQLite store unavailable: cannot create the directory "${join(dir, 'state', 'sub')}" for "${join(dir, 'state', 'sub', 'leash.db')}": "${join(dir, 'state')}" is a file, not a directory`,
    });
  });
});

describe('mkdirProblem', () => {
  it('names the directory it had no permission to create directories in', () => {
    const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    expect(mkdirProblem(join(dir, 'a', 'b'), denied)).toBe(`no permission to create directories in "${dir}"`);
  });
});
