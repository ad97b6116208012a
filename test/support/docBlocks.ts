// The TypeScript blocks of the project's pages (README.md, docs/*.md), each made a module of its own for
// a consumer project to compile (and, for the README's, to run), with the way back from a line of that
// module to the line of the page it came from.
//
// Every ```ts block is a whole module a user can paste: imports included, nothing left undefined. The one
// exception is a block that truly continues the ts block above it on the same page (the next step of the
// same program): the page marks it with the HTML comment `<!-- continues -->` (invisible once rendered)
// as the last non-blank line before its fence, and it is compiled after the code of the block above it
// (and of that block's own block above, when it continues one too).

/** The marker, alone on the line before a ```ts fence, of a block that continues the ts block above it. */
export const CONTINUES = '<!-- continues -->';

/** One ```ts block of a page. */
export interface DocBlock {
  /** The page, as the checkout names it: `README.md`, `docs/agents.md`. */
  readonly page: string;
  /** The line of the page where the block's code starts (the line after its fence), from 1. */
  readonly line: number;
  readonly code: string;
  /** Whether the page marks it as continuing the ts block above it. */
  readonly continues: boolean;
}

/** A stretch of a module's lines that came from one block. */
interface Part {
  /** The module's line where the block's code starts, from 1. */
  readonly from: number;
  readonly lines: number;
  readonly block: DocBlock;
}

/** A block as a module to compile: its code after that of the blocks it continues. */
export interface DocModule {
  /** The file name of the module, unique per page and line: `docs-agents-12`. */
  readonly name: string;
  /** Where the block is, for people: `docs/agents.md:12`. */
  readonly where: string;
  readonly block: DocBlock;
  readonly source: string;
  readonly parts: readonly Part[];
}

const FENCE = /^```(\S*)/;

/** The ```ts blocks of `text`, the page `page`, in order. */
export function tsBlocks(page: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  let previous = '';
  for (let i = 0; i < lines.length; i++) {
    const fence = FENCE.exec(lines[i] as string);
    if (fence === null) {
      if ((lines[i] as string).trim() !== '') previous = (lines[i] as string).trim();
      continue;
    }
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end === -1) throw new Error(`${page}:${i + 1}: a code block that never ends`);
    const continues = previous === CONTINUES;
    if (fence[1] === 'ts') {
      const code = lines.slice(i + 1, end).join('\n');
      blocks.push({ page, line: i + 2, code, continues });
    } else if (continues) {
      throw new Error(`${page}:${i + 1}: ${CONTINUES} stands before a block that is not ts`);
    }
    previous = '';
    i = end;
  }
  return blocks;
}

/** Each block as a module; a block that continues another follows the code of the block(s) it continues. */
export function docModules(blocks: readonly DocBlock[]): DocModule[] {
  const modules: DocModule[] = [];
  for (const block of blocks) {
    const above = modules.at(-1);
    if (block.continues && above?.block.page !== block.page) {
      throw new Error(`${block.page}:${block.line - 1}: ${CONTINUES}, but no ts block above it on the page`);
    }
    const head = block.continues && above !== undefined ? above : null;
    const before = head === null ? [] : head.parts;
    const offset = head === null ? 0 : head.source.split('\n').length;
    const parts = [...before, { from: offset + 1, lines: block.code.split('\n').length, block }];
    const source = head === null ? block.code : `${head.source}\n${block.code}`;
    const name = `${block.page.replace(/\.md$/, '').replace(/\W+/g, '-').toLowerCase()}-${block.line}`;
    modules.push({ name, where: `${block.page}:${block.line}`, block, source, parts });
  }
  return modules;
}

/** The page and line a line of `module` came from: `docs/agents.md:14`. */
export function pageLine(module: DocModule, line: number): string {
  const part = module.parts.find((p) => line >= p.from && line < p.from + p.lines);
  if (part === undefined) return `${module.where} (module line ${line})`;
  return `${part.block.page}:${part.block.line + line - part.from}`;
}

/**
 * tsc's diagnostics by module name, each told against the page (`README.md:163:5 error TS2304: …`), from
 * its output for the modules in `files` (by the path tsc names them with); those of other files are
 * under '', as tsc wrote them.
 */
export function diagnosticsByModule(
  output: string,
  files: ReadonlyMap<string, DocModule>,
): Map<string, string[]> {
  const found = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const text of output.split('\n')) {
    const located = /^(.+?)\((\d+),(\d+)\): (.*)$/.exec(text);
    if (located === null) {
      // A diagnostic's further lines are indented under it.
      if (text.trim() !== '') (current ?? add(found, '')).push(text);
      continue;
    }
    const [, file, line, column, message] = located as unknown as [string, string, string, string, string];
    const module = files.get(file);
    current = add(found, module?.name ?? '');
    current.push(module === undefined ? text : `${pageLine(module, Number(line))}:${column} ${message}`);
  }
  return found;
}

function add(map: Map<string, string[]>, key: string): string[] {
  const list = map.get(key) ?? [];
  map.set(key, list);
  return list;
}
