import { describe, expect, it } from 'vitest';
import { GuardrailError } from '../../src/errors.js';
import { driverLoader } from '../../src/store/drivers.js';

/** What `require` throws for a package that is not installed. */
function notFound(name: string): Error {
  return Object.assign(new Error(`Cannot find module '${name}'\nRequire stack:\n- /app/drivers.js`), {
    code: 'MODULE_NOT_FOUND',
  });
}

function thrownBy(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
}

describe('driverLoader', () => {
  it('returns what loading the package returns', () => {
    const pg = { Pool: class {} };
    const driver = driverLoader((name) => (name === 'pg' ? pg : undefined));
    expect(driver('pg')).toBe(pg);
  });

  it('loads each package once', () => {
    const asked: string[] = [];
    const driver = driverLoader((name) => {
      asked.push(name);
      return {};
    });
    driver('pg');
    driver('pg');
    driver('better-sqlite3');
    expect(asked).toEqual(['pg', 'better-sqlite3']);
  });

  it('refuses a package that is not installed with STORE_DRIVER_MISSING', () => {
    const driver = driverLoader((name) => {
      throw notFound(name);
    });
    const error = thrownBy(() => driver('pg'));
    expect(error).toBeInstanceOf(GuardrailError);
    expect((error as GuardrailError).code).toBe('STORE_DRIVER_MISSING');
  });

  it('names the package, the store that needs it and how to install it', () => {
    const driver = driverLoader((name) => {
      throw notFound(name);
    });
    expect(() => driver('pg')).toThrow(
      'PostgresStore needs the package pg, but it is not installed; install it with `npm install pg`',
    );
  });

  it('says why a package that is installed failed to load', () => {
    const driver = driverLoader(() => {
      throw notFound('pg-types');
    });
    expect(() => driver('pg')).toThrow(
      "PostgresStore needs the package pg, but it failed to load: Cannot find module 'pg-types'",
    );
  });

  it('names SqliteStore for better-sqlite3', () => {
    const driver = driverLoader((name) => {
      throw notFound(name);
    });
    expect(() => driver('better-sqlite3')).toThrow(
      'SqliteStore needs the package better-sqlite3, but it is not installed; install it with `npm install better-sqlite3`',
    );
  });

  it('tries again after a failure', () => {
    let installed = false;
    const driver = driverLoader((name) => {
      if (!installed) throw notFound(name);
      return {};
    });
    expect(() => driver('pg')).toThrow(GuardrailError);
    installed = true;
    expect(driver('pg')).toEqual({});
  });
});
