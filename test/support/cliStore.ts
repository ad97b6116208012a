import { dirname } from 'node:path';
import { beforeEach } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { leashIn } from './cli.js';
import { T0 } from './service.js';
import { tempFiles } from './tempFiles.js';

/**
 * `leash` in this process on a new SQLite file for each test, at a manual clock the test moves, and a
 * service on the same file for setting up and reading back what the command did.
 */
export function cliOnSqlite(prefix: string): {
  readonly clock: () => ManualClock;
  /** Runs `leash argv --db <file>` with `env` as its environment. */
  readonly leash: (argv: readonly string[], env?: NodeJS.ProcessEnv) => ReturnType<typeof leashIn>;
  /** Runs `body` with a service on the file (made if missing) at the test's clock; closes it after. */
  readonly withService: <T>(body: (service: AutonomyGuardrailService) => Promise<T>) => Promise<T>;
} {
  const files = tempFiles(prefix);
  let db = '';
  let clock = new ManualClock(T0);
  beforeEach(() => {
    db = files.newFile();
    clock = new ManualClock(T0);
  });
  return {
    clock: () => clock,
    leash: (argv, env = {}) => leashIn(dirname(db), [...argv, '--db', db], { clock, env }),
    withService: async (body) => {
      const store = new SqliteStore({ path: db });
      try {
        await store.migrate();
        return await body(new AutonomyGuardrailService({ store, clock }));
      } finally {
        await store.close();
      }
    },
  };
}
