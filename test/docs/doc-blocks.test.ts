// How the pages' ts blocks become modules for test/package/docs-blocks.test.ts, and how tsc's errors are
// told against the page.
import { describe, expect, it } from 'vitest';
import { CONTINUES, diagnosticsByModule, docModules, pageLine, tsBlocks } from '../support/docBlocks.js';

const PAGE = [
  '# A page',
  '',
  '```ts',
  "const a = 'a';",
  '```',
  '',
  '```sh',
  'echo not ts',
  '```',
  '',
  CONTINUES,
  '',
  '```ts',
  'console.log(a);',
  '```',
].join('\n');

describe('the ts blocks of a page', () => {
  it('finds each ts block, with the line its code starts on', () => {
    expect(tsBlocks('p.md', PAGE)).toEqual([
      { page: 'p.md', line: 4, code: "const a = 'a';", continues: false },
      { page: 'p.md', line: 14, code: 'console.log(a);', continues: true },
    ]);
  });

  it('makes a block marked as continuing one module with the block above it', () => {
    const [, second] = docModules(tsBlocks('p.md', PAGE));
    expect(second?.source).toBe("const a = 'a';\nconsole.log(a);");
  });

  it('tells a line of a continuing module against the block it came from', () => {
    const [, second] = docModules(tsBlocks('p.md', PAGE));
    expect([pageLine(second!, 1), pageLine(second!, 2)]).toEqual(['p.md:4', 'p.md:14']);
  });

  it('refuses the marker when no ts block of the page is above it', () => {
    const other = docModules(tsBlocks('a.md', '```ts\nlet x = 1;\n```'));
    expect(() =>
      docModules([...other.map((m) => m.block), ...tsBlocks('b.md', `${CONTINUES}\n\`\`\`ts\nx;\n\`\`\``)]),
    ).toThrow('b.md:2: <!-- continues -->, but no ts block above it on the page');
  });

  it('refuses the marker before a block that is not ts', () => {
    expect(() => tsBlocks('p.md', `${CONTINUES}\n\`\`\`sh\nls\n\`\`\``)).toThrow('p.md:2');
  });

  it("tells tsc's errors against the page, and keeps those of other files apart", () => {
    const [first] = docModules(tsBlocks('p.md', PAGE));
    const output = [
      "blocks/p-4.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.",
      "node_modules/x/index.d.ts(3,1): error TS1005: ';' expected.",
      '  a further line of it',
    ].join('\n');
    const found = diagnosticsByModule(output, new Map([['blocks/p-4.ts', first!]]));
    expect(Object.fromEntries(found)).toEqual({
      'p-4': ["p.md:4:7 error TS2322: Type 'string' is not assignable to type 'number'."],
      '': ["node_modules/x/index.d.ts(3,1): error TS1005: ';' expected.", '  a further line of it'],
    });
  });
});
