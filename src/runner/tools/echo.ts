import type { Tool } from '../../executor/tools.js';
import { isPlainObject, type JsonValue } from '../../json.js';
import { validateToolInput } from '../planFile.js';

/**
 * The `echo` tool: returns `input.message` when the input is an object, else the input itself. Its output
 * lands in the run's results and its call in the audit trail, which makes it the step for notes and
 * "released" notifications. An object input may hold only `message`, so a misspelt key is refused.
 */
export function echoTool(): Tool {
  return Object.freeze({
    name: 'echo',
    description: 'Returns its message (or its input): for notes and notify steps.',
    run(raw: JsonValue | undefined): JsonValue | undefined {
      if (raw === undefined) return undefined;
      const input = validateToolInput('echo', raw);
      return isPlainObject(input) ? (input['message'] as JsonValue | undefined) : input;
    },
  });
}
