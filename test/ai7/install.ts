// ai 7, which the AI SDK adapter's tests also run on, asks for Node 22: it is installed here, in a
// folder of its own, so that the project's `npm ci` on Node 20 stays free of it. The vitest project
// `ai 7` installs it before its tests (this file is its global setup), and so does any test that needs
// it. Its peer zod is left out (--omit=peer): ai 7 resolves the project's copy, the one the tests build
// their schemas with.
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { folderApart } from '../support/apart.js';

const ai7 = folderApart({
  dir: dirname(fileURLToPath(import.meta.url)),
  what: 'ai 7',
  neededBy: "the AI SDK adapter's tests on ai 7",
  has: ['ai/package.json'],
  flags: ['--omit=peer'],
});

/** This folder: its package.json and package-lock.json pin ai 7. */
export const AI7_DIR = ai7.dir;
/** Where ai 7 and its dependencies are installed. */
export const AI7_MODULES = ai7.modules;

/** Installs ai 7 from its lock unless that exact install is already there; throws when npm fails. */
export const installAi7 = ai7.install;

/** The vitest global setup of the project `ai 7`. */
export function setup(): void {
  installAi7();
}
