import type { Tool } from '../../executor/tools.js';
import { invalid } from '../../errors.js';
import type { PlanFileTools } from '../planSchema.js';
import { echoTool } from './echo.js';
import { httpTool } from './http.js';
import { shellTool } from './shell.js';
import { sleepTool, type SleepFunction } from './sleep.js';

export { echoTool } from './echo.js';
export {
  HttpRequestFailed,
  httpTool,
  MAX_HTTP_BODY_BYTES,
  type HttpOutput,
  type HttpToolOptions,
} from './http.js';
export {
  MAX_SHELL_OUTPUT_BYTES,
  SHELL_KILL_GRACE_MS,
  ShellCommandFailed,
  ShellCommandTimedOut,
  shellTool,
  type ShellOutput,
  type ShellToolOptions,
} from './shell.js';
export {
  realSleep,
  sleepTool,
  type SleepFunction,
  type SleepOutput,
  type SleepToolOptions,
} from './sleep.js';

/** Options of {@link builtinTools}. */
export interface BuiltinToolOptions {
  /** The folder shell commands run in unless a decision says otherwise: the plan file's. */
  readonly baseDir: string;
  /** The environment the shell tool's allow-listed variables are copied from; default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** The http tool's fetch; default `globalThis.fetch`. */
  readonly fetch?: typeof fetch;
  /** The sleep tool's wait; default a real timer. */
  readonly sleep?: SleepFunction;
}

/**
 * The `leash` command's built-in tools, `shell`, `http`, `sleep` and `echo`, configured by a plan file's
 * `tools` settings.
 *
 * @example
 * const executor = new PlanExecutor({ service, tools: builtinTools(file.tools, { baseDir: dirname(path) }) });
 */
export function builtinTools(settings: PlanFileTools | undefined, options: BuiltinToolOptions): Tool[] {
  if (typeof options?.baseDir !== 'string' || options.baseDir === '') {
    invalid('options.baseDir', 'a directory path', options?.baseDir);
  }
  return [
    shellTool(settings?.shell, {
      baseDir: options.baseDir,
      ...(options.env === undefined ? {} : { env: options.env }),
    }),
    httpTool(settings?.http, options.fetch === undefined ? {} : { fetch: options.fetch }),
    sleepTool(options.sleep === undefined ? {} : { sleep: options.sleep }),
    echoTool(),
  ];
}
