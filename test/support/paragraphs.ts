// The paragraphs of a Markdown page and how long each reads, so that a test can hold every page to short
// paragraphs. A paragraph is a run of non-blank lines of prose outside code blocks; each list item is
// one of its own, and so is each table row (by its longest cell). Headings, HTML comments and code blocks
// are not prose. Length is counted in lines of the width the pages are written at (Prettier's 110
// columns), so a paragraph written as one long line counts as long as it reads.

/** The width the pages' prose is wrapped at. */
export const WIDTH = 110;

export interface Paragraph {
  /** The page's line where it starts, from 1. */
  readonly line: number;
  /** How many lines of {@link WIDTH} columns it takes. */
  readonly lines: number;
  readonly kind: 'prose' | 'list item' | 'table row';
}

const LIST_ITEM = /^\s*(?:[-*+]|\d+\.)\s/;

/** The lines of {@link WIDTH} columns `text` takes. */
const width = (text: string) => Math.max(1, Math.ceil([...text.trim()].length / WIDTH));

/** Every paragraph of the Markdown `text`, in order. */
export function paragraphs(text: string): Paragraph[] {
  const found: Paragraph[] = [];
  let open: { line: number; lines: number; kind: Paragraph['kind'] } | null = null;
  const close = () => {
    if (open !== null) found.push(open);
    open = null;
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (/^\s*```/.test(line)) {
      close();
      while (i + 1 < lines.length && !/^\s*```/.test(lines[i + 1] as string)) i++;
      i++;
    } else if (line.trim() === '' || /^#{1,6} /.test(line) || /^\s*<!--.*-->\s*$/.test(line)) {
      close();
    } else if (line.startsWith('|')) {
      close();
      const cells = line.split(/(?<!\\)\|/).map((cell) => width(cell));
      found.push({ line: i + 1, lines: Math.max(...cells), kind: 'table row' });
    } else if (LIST_ITEM.test(line) || open === null) {
      close();
      open = { line: i + 1, lines: width(line), kind: LIST_ITEM.test(line) ? 'list item' : 'prose' };
    } else {
      open.lines += width(line);
    }
  }
  close();
  return found;
}
