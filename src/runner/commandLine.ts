// The `leash` commands printed for a person to paste into a shell (after a run, in an MCP result, on the
// dashboard): each runs as it is, with the store it needs, and no word a shell would read otherwise.

/** How a printed command starts when `leash` is not found on the PATH: npx finds the local install. */
export const NPX_LEASH = 'npx leash';

/** How the printed commands start, and the store they name. */
export interface CommandStyle {
  /** `leash` when that runs this leash, else {@link NPX_LEASH}. */
  readonly leash: string;
  /** ` --db <store>` (quoted for the shell) when the store is not the default one; empty otherwise. */
  readonly dbArg: string;
}

/** The style of a caller that knows neither: `npx leash`, on the default store. */
export const DEFAULT_STYLE: CommandStyle = Object.freeze({ leash: NPX_LEASH, dbArg: '' });

/** A word given to the shell as it is, for the shell to expand. */
export interface ShellText {
  readonly shell: string;
}

/** The name of the person at the terminal, as the shell knows it. */
export const CURRENT_USER: ShellText = Object.freeze({ shell: '"$USER"' });

/** The personal token of the person at the terminal, as `leash approve` reads it too: LEASH_TOKEN. */
export const CURRENT_TOKEN: ShellText = Object.freeze({ shell: '"$LEASH_TOKEN"' });

// Characters no POSIX shell treats specially anywhere in a word.
const PLAIN = /^[\w/.:@%+=,-]+$/;

/**
 * `word` as a POSIX shell reads it back unchanged: as it is when it holds only plain characters, else in
 * single quotes (a quote inside written `'\''`).
 * @example
 * shellWord('release'); // release
 * shellWord('my plan'); // 'my plan'
 */
export function shellWord(word: string): string {
  return PLAIN.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A `leash` command for a person to paste: the start of `style`, the subcommand, its operands and options
 * (each quoted with {@link shellWord} unless given as {@link ShellText}), then the store's `--db`. An
 * operand that begins with `-` comes last, after `--`, so that it is not read as an option.
 * @example
 * leashCommand(style, 'approve', ['0f3c…'], ['--by', CURRENT_USER]); // npx leash approve 0f3c… --by "$USER"
 */
export function leashCommand(
  style: CommandStyle,
  command: string,
  operands: readonly string[] = [],
  options: readonly (string | ShellText)[] = [],
): string {
  const words = (list: readonly (string | ShellText)[]) =>
    list.map((w) => (typeof w === 'string' ? shellWord(w) : w.shell));
  const head = `${style.leash} ${command}`;
  const flags = words(options).join(' ');
  const tail = `${flags === '' ? '' : ` ${flags}`}${style.dbArg}`;
  if (operands.some((o) => o.startsWith('-'))) return `${head}${tail} -- ${words(operands).join(' ')}`;
  return `${[head, ...words(operands)].join(' ')}${tail}`;
}

/**
 * The command with which the person at the terminal approves or denies approval `approvalId`, giving
 * `reason`: `--by "$USER"`, which their shell fills in; with `as: 'token'` (a store that knows people)
 * `--token "$LEASH_TOKEN"`, their personal token.
 */
export function decideCommand(
  style: CommandStyle,
  action: 'approve' | 'deny',
  approvalId: string,
  reason: string,
  as: 'name' | 'token' = 'name',
): string {
  const who = as === 'token' ? ['--token', CURRENT_TOKEN] : ['--by', CURRENT_USER];
  return leashCommand(style, action, [approvalId], [...who, '--reason', reason]);
}
