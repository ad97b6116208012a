// The pages are read by newcomers: no paragraph, list item or table cell of README.md or docs/*.md runs
// over 8 lines of the width they are written at (test/support/paragraphs.ts counts them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { paragraphs, WIDTH } from '../support/paragraphs.js';
import { PAGES } from '../support/pages.js';
import { ROOT } from '../support/consumer.js';

const MAX_LINES = 8;

describe('paragraphs', () => {
  it('counts a paragraph written on one long line as the lines it reads', () => {
    expect(paragraphs('x'.repeat(WIDTH * 3))).toEqual([{ line: 1, lines: 3, kind: 'prose' }]);
  });

  it('counts each list item on its own, with the lines that continue it', () => {
    expect(paragraphs('- one\n  two\n- three').map((p) => p.lines)).toEqual([2, 1]);
  });

  it('counts a table row by its longest cell', () => {
    expect(paragraphs(`| a | ${'x'.repeat(WIDTH * 2)} |`)).toEqual([
      { line: 1, lines: 2, kind: 'table row' },
    ]);
  });

  it('leaves code blocks, headings and HTML comments out', () => {
    expect(paragraphs('# title\n\n```ts\nconst a = 1;\nconst b = 2;\n```\n<!-- continues -->\n')).toEqual([]);
  });

  it.each(PAGES)(`%s has no paragraph over ${MAX_LINES} lines`, (page) => {
    const long = paragraphs(readFileSync(join(ROOT, page), 'utf8'))
      .filter((p) => p.lines > MAX_LINES)
      .map((p) => `${page}:${p.line}: a ${p.kind} of ${p.lines} lines`);
    expect(long).toEqual([]);
  });
});
