import { createHash } from 'node:crypto';
import { canonicalJson } from '../json.js';

/** SHA-256 (hex) of `input` as canonical JSON; `undefined` hashes as `null`. */
export function inputHash(input: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(input === undefined ? null : input, 'input'))
    .digest('hex');
}
