import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Relative links and anchors of Markdown pages, checked the way GitHub renders them: a link
 * `[text](path#anchor)` must name a file or directory that exists, and its anchor a heading of
 * that page (GitHub's slug: lower case, punctuation dropped, spaces as `-`, `-1`, `-2` for repeats).
 * Links inside code (fenced blocks, `spans`) are not links; http(s) and mailto links are not checked.
 */

/** The page with its fenced code blocks emptied and its code spans replaced by a placeholder. */
function withoutCode(markdown: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const open = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence) {
      if (open && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      out.push('');
    } else if (open) {
      fence = open;
      out.push('');
    } else {
      out.push(line);
    }
  }
  // A code span may run over a line break, never over a blank line (the paragraph's end).
  return out.join('\n').replace(/(`+)(?:(?!\n\s*\n)[\s\S])+?\1/g, 'code');
}

export function slug(headingText: string): string {
  const text = headingText
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading keeps its text
    .replace(/`/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page has: its headings' slugs, repeats numbered as GitHub numbers them. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const lines = markdown.split('\n');
  let fence: string | undefined;
  for (const line of lines) {
    const open = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence) {
      if (open && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      continue;
    }
    if (open) {
      fence = open;
      continue;
    }
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

export interface LinkProblem {
  readonly page: string;
  readonly link: string;
  readonly problem: string;
}

/** The links of one page (given as text, at `pagePath`) that do not resolve. */
export function brokenLinks(pagePath: string, markdown: string, root: string, pending: readonly string[] = []): LinkProblem[] {
  const problems: LinkProblem[] = [];
  const page = relative(root, pagePath);
  for (const m of withoutCode(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const link = m[1]!;
    if (/^(https?|mailto):/i.test(link)) continue;
    const [path = '', anchor] = link.split('#', 2);
    const target = path === '' ? pagePath : resolve(dirname(pagePath), decodeURIComponent(path));
    if (path !== '' && !existsSync(target)) {
      if (!pending.includes(relative(root, target))) problems.push({ page, link, problem: 'no such file' });
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (path !== '' && (statSync(target).isDirectory() || !target.endsWith('.md'))) {
      problems.push({ page, link, problem: 'an anchor into something that is not a Markdown page' });
      continue;
    }
    const text = target === pagePath ? markdown : readFileSync(target, 'utf8');
    if (!anchorsOf(text).has(decodeURIComponent(anchor))) problems.push({ page, link, problem: `no heading #${anchor} in ${relative(root, target)}` });
  }
  return problems;
}

export function brokenLinksIn(files: readonly string[], root: string, pending: readonly string[] = []): LinkProblem[] {
  return files.flatMap((f) => brokenLinks(join(root, f), readFileSync(join(root, f), 'utf8'), root, pending));
}
