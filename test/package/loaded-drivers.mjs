// Imports the leash entry point its first argument names (a file URL), then constructs a SqliteStore, then
// a PostgresStore with a url, and prints which database drivers were loaded after each, as JSON. A CommonJS
// package loaded from ESM lands in require.cache under the file its main resolves to.
import { createRequire } from 'node:module';
import process from 'node:process';

const require = createRequire(import.meta.url);
const DRIVERS = ['better-sqlite3', 'pg'];
const loaded = () => DRIVERS.filter((name) => require.resolve(name) in require.cache);

const leash = await import(process.argv[2]);
const afterImport = loaded();
if (leash.SqliteStore === undefined) {
  // An entry without the stores (leash/ai-sdk): what its import loaded is all there is to tell.
  process.stdout.write(JSON.stringify({ afterImport }));
  process.exit(0);
}
await new leash.SqliteStore().close();
const afterSqliteStore = loaded();
// Port 1: the pool connects on its first query, which this store never makes.
await new leash.PostgresStore({ url: 'postgres://127.0.0.1:1/none' }).close();
const afterPostgresStore = loaded();
process.stdout.write(JSON.stringify({ afterImport, afterSqliteStore, afterPostgresStore }));
