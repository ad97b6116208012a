// Every link of README.md and docs/*.md to a file of the checkout finds the file, and the heading it
// names, when it names one.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/consumer.js';
import { anchors, localLinks } from '../support/links.js';
import { PAGES } from '../support/pages.js';

describe('links', () => {
  it('makes the anchor of a heading as GitHub does', () => {
    const text = '## The Vercel AI SDK (`leash/ai-sdk`)\n### A plan: `/plans/:id`\n## Notes\n## Notes';
    expect([...anchors(text)]).toEqual([
      'the-vercel-ai-sdk-leashai-sdk',
      'a-plan-plansid',
      'notes',
      'notes-1',
    ]);
  });

  it('finds links and images to files, not web addresses or code', () => {
    const text = '[a](docs/a.md#x) ![b](b.png) [c](https://c.example) `[d](d.md)`\n```\n[e](e.md)\n```';
    expect(localLinks(text)).toEqual([
      { line: 1, file: 'docs/a.md', anchor: 'x' },
      { line: 1, file: 'b.png', anchor: null },
    ]);
  });

  it.each(PAGES)('%s links only to files and headings that exist', (page) => {
    const broken = localLinks(readFileSync(join(ROOT, page), 'utf8')).flatMap(({ line, file, anchor }) => {
      const target = file === '' ? join(ROOT, page) : join(ROOT, dirname(page), file);
      if (!existsSync(target)) return [`${page}:${line}: ${file} does not exist`];
      if (anchor === null || !target.endsWith('.md')) return [];
      return anchors(readFileSync(target, 'utf8')).has(anchor) ? [] : [`${page}:${line}: ${file}#${anchor}`];
    });
    expect(broken).toEqual([]);
  });
});
