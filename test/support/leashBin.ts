import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
// Resolved here: the command may run in a temporary folder, where the package cannot be found by name.
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

/** The arguments of node (process.execPath) that run the TypeScript file `script` with `args`. */
export function tsxArgs(script: string, ...args: string[]): string[] {
  return ['--import', TSX, script, ...args];
}

/** The arguments of node (process.execPath) that run `leash <args>` from the sources. */
export function leashArgs(...args: string[]): string[] {
  return tsxArgs(BIN, ...args);
}
