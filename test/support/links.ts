// The links of a Markdown page to other files of the checkout, and the anchors its headings make, as
// GitHub makes them: so that a test can hold every link of the pages to a file and heading that exist.

/** A link of a page to a file of the checkout (not to a web address), with the heading it points at. */
export interface Link {
  /** The page's line where it is, from 1. */
  readonly line: number;
  /** The file, as the link writes it (relative to the page); empty for a heading of the page itself. */
  readonly file: string;
  readonly anchor: string | null;
}

/** The links (and images) of the Markdown `text` to files of the checkout, outside code blocks. */
export function localLinks(text: string): Link[] {
  const links: Link[] = [];
  let inCode = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) inCode = !inCode;
    if (inCode) return;
    for (const [, target] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target as string)) continue;
      const [file, anchor] = (target as string).split('#') as [string, string | undefined];
      links.push({ line: i + 1, file, anchor: anchor ?? null });
    }
  });
  return links;
}

/** The anchors of the headings of the Markdown `text`, as GitHub makes them (`-1`, `-2` for repeats). */
export function anchors(text: string): Set<string> {
  const found = new Set<string>();
  let inCode = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) inCode = !inCode;
    const heading = inCode ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading === null) continue;
    const slug = (heading[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    let anchor = slug;
    for (let n = 1; found.has(anchor); n++) anchor = `${slug}-${n}`;
    found.add(anchor);
  }
  return found;
}
