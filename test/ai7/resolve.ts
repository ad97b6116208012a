// The vitest project `ai 7` runs the AI SDK adapter's tests with `ai` (and `ai/test`, …) resolved from
// the install in this folder. Resolved from anywhere else, `ai` would be the project's ai 6: an import
// that does not land in this folder's node_modules is an error, never ai 6 in ai 7's place.
import { realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { Plugin } from 'vite';
import { AI7_DIR, AI7_MODULES } from './install.js';

const AI = /^ai(\/.*)?$/;

export function resolveAiFromAi7(): Plugin {
  // A file of this folder as the importer: the resolver looks in this folder's node_modules first.
  const importer = join(AI7_DIR, 'package.json');
  return {
    name: 'leash:ai-7',
    enforce: 'pre',
    async resolveId(source, _from, options) {
      if (!AI.test(source)) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      if (resolved === null || !installedHere(resolved.id)) {
        throw new Error(`"${source}" did not resolve to ai 7 in ${AI7_MODULES} but to ${resolved?.id}`);
      }
      return resolved;
    },
  };
}

/** Whether the file `id` names (a query stripped) lies in this folder's node_modules. */
function installedHere(id: string): boolean {
  try {
    return realpathSync(id.replace(/\?.*$/, '')).startsWith(realpathSync(AI7_MODULES) + sep);
  } catch {
    return false;
  }
}
