// Reading configuration files (policy files, plan files) from untrusted text: YAML or JSON in, a value
// checked against a zod schema out, and every refusal a GuardrailValidationError naming the path.
import { parseDocument, type Document, type YAMLError } from 'yaml';
import { describeValue, errorText, GuardrailValidationError } from '../errors.js';
import { refuse, refuseUnknownKeys, type Subject } from '../validation.js';

/**
 * Aliases expanded while reading YAML, weighted by what they expand to. Enough for a few shared tool rules,
 * far too few for an alias bomb ("billion laughs").
 */
export const MAX_YAML_ALIAS_COUNT = 64;

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The subject of a file called `source`, or of an unnamed value called `fallback`.
 * @throws GuardrailValidationError (field `source`) for a source name that cannot head a message
 */
export function subjectOf(source: unknown, fallback: string): Subject {
  if (source === undefined) return { root: fallback, prefix: '', at: [] };
  if (typeof source !== 'string' || source.length === 0 || CONTROL.test(source)) {
    throw new GuardrailValidationError(
      'source',
      `source must be a non-empty string without control characters, got ${describeValue(source)}`,
    );
  }
  return { root: source, prefix: `${source}: `, at: [] };
}

/** Checks that `options` is undefined or an object of `known` keys only, and returns it. */
export function readOptions(options: unknown, known: readonly string[]): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new GuardrailValidationError('options', `options must be an object, got ${describeValue(options)}`);
  }
  refuseUnknownKeys(options, known, 'options.');
  return options as Record<string, unknown>;
}

/** Checks the `format` option of a reader: `yaml`, `json`, or undefined (YAML). */
export function readFormat(format: unknown): 'yaml' | 'json' | undefined {
  if (format !== undefined && format !== 'yaml' && format !== 'json') {
    throw new GuardrailValidationError(
      'format',
      `format must be "yaml" or "json", got ${describeValue(format)}`,
    );
  }
  return format;
}

/**
 * Reads the text of a configuration file. YAML is the default and, being a superset of JSON, reads JSON
 * files too; `json` insists on strict JSON. A byte order mark is skipped; duplicate keys, several
 * documents, custom tags and alias bombs are refused. `noun` names the kind of file in messages
 * (`a policy file must hold exactly one document`).
 */
export function readText(
  text: unknown,
  format: 'yaml' | 'json' | undefined,
  subject: Subject,
  noun: string,
): unknown {
  if (typeof text !== 'string') {
    throw refuse(subject, subject.root, `must be text (a string), got ${describeValue(text)}`);
  }
  // Editors on some systems write a byte order mark; it is not content.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return format === 'json' ? readJson(body, subject) : readYaml(body, subject, noun);
}

// ---- reading text ----------------------------------------------------------------------------------

function readYaml(text: string, subject: Subject, noun: string): unknown {
  let doc: Document.Parsed;
  try {
    doc = parseDocument(text, {
      version: '1.2',
      schema: 'core',
      merge: false,
      uniqueKeys: true,
      // `1:` and `true:` are names, not a number and a boolean turned back into text.
      stringKeys: true,
      prettyErrors: true,
    });
  } catch (e) {
    throw unreadable(subject, 'YAML', e);
  }
  // Warnings are refused too: an unresolved tag or a collection used as a key means the file does not
  // say what it seems to.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem !== undefined) throw yamlError(problem, subject, noun);
  if (doc.contents === null) throw refuse(subject, subject.root, 'is empty');
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT });
  } catch (e) {
    if (e instanceof ReferenceError && /excessive alias count/i.test(e.message)) {
      const limit = `the limit of ${MAX_YAML_ALIAS_COUNT} (a defence against alias bombs)`;
      throw refuse(subject, subject.root, `is refused: its YAML aliases expand beyond ${limit}`, e);
    }
    throw unreadable(subject, 'YAML', e);
  }
}

function yamlError(problem: YAMLError, subject: Subject, noun: string): GuardrailValidationError {
  const reason =
    problem.code === 'MULTIPLE_DOCS'
      ? `${noun} must hold exactly one document`
      : (problem.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
  const pos = problem.linePos?.[0];
  const where = pos === undefined ? '' : ` (line ${pos.line}, column ${pos.col})`;
  return refuse(subject, subject.root, `is not valid YAML: ${reason}${where}`, problem);
}

function readJson(text: string, subject: Subject): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const message = errorText(e);
    const at = /at position (\d+)/.exec(message);
    const reason = message
      .replace(/ in JSON at position \d+.*$/s, '')
      .replace(/ \(line \d+ column \d+\)$/, '');
    const where = at?.[1] === undefined ? '' : ` (${lineColumn(text, Number(at[1]))})`;
    throw refuse(subject, subject.root, `is not valid JSON: ${reason}${where}`, e);
  }
  // JSON.parse keeps the last of two equal keys: the first limit would vanish without a word.
  const duplicate = findDuplicateKey(text);
  if (duplicate !== undefined) {
    const key = describeValue(duplicate.key);
    const where = lineColumn(text, duplicate.index);
    throw refuse(
      subject,
      subject.root,
      `is not valid JSON: key ${key} appears twice in one object (${where})`,
    );
  }
  return value;
}

/** The first key repeated within one object of `text`, which must be valid JSON. */
function findDuplicateKey(text: string): { key: string; index: number } | undefined {
  // One entry per open object (its keys so far) or array (null).
  const open: (Set<string> | null)[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      i++;
      const keys = open.at(-1);
      if (keys) {
        let j = i;
        while (text[j] === ' ' || text[j] === '\t' || text[j] === '\n' || text[j] === '\r') j++;
        if (text[j] === ':') {
          const key = JSON.parse(text.slice(start, i)) as string;
          if (keys.has(key)) return { key, index: start };
          keys.add(key);
        }
      }
      continue;
    }
    if (c === '{') open.push(new Set());
    else if (c === '[') open.push(null);
    else if (c === '}' || c === ']') open.pop();
    i++;
  }
  return undefined;
}

function lineColumn(text: string, index: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < index && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      lineStart = i + 1;
    }
  }
  return `line ${line}, column ${index - lineStart + 1}`;
}

function unreadable(subject: Subject, format: string, e: unknown): GuardrailValidationError {
  return refuse(subject, subject.root, `is not valid ${format}: ${errorText(e)}`, e);
}
