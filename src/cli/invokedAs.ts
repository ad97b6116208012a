// How a person at a shell runs this leash: by its name when the shell finds it, else through npx.
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { NPX_LEASH } from '../runner/commandLine.js';

/** PATH folders npm adds for the scripts it runs (npx, `npm run`): a shell the person types in lacks them. */
const ADDED_BY_NPM = /[\\/](node_modules[\\/]\.bin|node-gyp-bin)[\\/]?$/;

/** The real path of `file`, or null when it is not an executable file. */
function executable(file: string): string | null {
  try {
    if (!statSync(file).isFile()) return null;
    accessSync(file, constants.X_OK);
    return realpathSync(file);
  } catch {
    return null;
  }
}

/**
 * How the commands this process prints start: `leash` when the first `leash` on the PATH is this one
 * (`bin`, the script the process was started as: process.argv[1]), else `npx leash`. Under npm (npx, `npm
 * run`), whose PATH holds folders the person's shell does not, those folders are passed over.
 * @example
 * invokedAs(process.env, process.argv[1], process.cwd()); // 'leash' after `npm install -g leash`
 */
export function invokedAs(env: NodeJS.ProcessEnv, bin: string | undefined, cwd: string): string {
  if (bin === undefined) return NPX_LEASH;
  const self = realpathOrNull(resolve(cwd, bin));
  if (self === null) return NPX_LEASH;
  const underNpm = env['npm_command'] !== undefined || env['npm_lifecycle_event'] !== undefined;
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (underNpm && ADDED_BY_NPM.test(dir)) continue;
    // An empty entry is the working folder, as shells read it.
    const found = executable(join(resolve(cwd, dir), 'leash'));
    if (found !== null) return found === self ? 'leash' : NPX_LEASH;
  }
  return NPX_LEASH;
}

function realpathOrNull(file: string): string | null {
  try {
    return realpathSync(file);
  } catch {
    return null;
  }
}
