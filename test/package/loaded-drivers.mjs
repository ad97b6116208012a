// Imports the leash entry point its first argument names (a file URL), then constructs a SqliteStore, then
// a PostgresStore with a url, and prints which database drivers were loaded after each, as JSON, with the
// agent frameworks and the packages loaded only when needed that the import loaded. A CommonJS package loaded from ESM lands in require.cache under the
// file its main resolves to; every module imported is seen by a resolve hook (test/package/resolve-log.mjs).
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

const require = createRequire(import.meta.url);
const DRIVERS = ['better-sqlite3', 'pg'];
const FRAMEWORKS = ['ai', 'langchain', '@langchain/core', '@langchain/langgraph', '@openai/agents'];
// Loaded only when needed: the OpenID Connect client, once a dashboard is given a provider.
const LAZY = ['openid-client'];
const loaded = () => DRIVERS.filter((name) => require.resolve(name) in require.cache);
const log = join(mkdtempSync(join(tmpdir(), 'leash-probe-')), 'resolved.log');
register('./resolve-log.mjs', import.meta.url, { data: { log } });

const leash = await import(process.argv[2]);
const afterImport = loaded();
const resolved = [...readFileSync(log, 'utf8').split('\n'), ...Object.keys(require.cache)].join('\n');
const frameworks = FRAMEWORKS.filter((name) => resolved.includes(`/node_modules/${name}/`));
const lazy = LAZY.filter((name) => resolved.includes(`/node_modules/${name}/`));
if (leash.SqliteStore === undefined) {
  // An entry without the stores (leash/ai-sdk): what its import loaded is all there is to tell.
  process.stdout.write(JSON.stringify({ afterImport, frameworks, lazy }));
  process.exit(0);
}
await new leash.SqliteStore().close();
const afterSqliteStore = loaded();
// Port 1: the pool connects on its first query, which this store never makes.
await new leash.PostgresStore({ url: 'postgres://127.0.0.1:1/none' }).close();
const afterPostgresStore = loaded();
process.stdout.write(JSON.stringify({ afterImport, frameworks, lazy, afterSqliteStore, afterPostgresStore }));
