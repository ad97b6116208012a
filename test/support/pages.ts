// The project's pages for people: the README and every Markdown page of docs/, as the checkout names them.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './consumer.js';

export const PAGES: readonly string[] = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
