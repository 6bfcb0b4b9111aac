// Every relative link and anchor in README.md and docs/*.md leads somewhere: the pages were cut out
// of one README, and a link left pointing at the old place would fail silently on GitHub.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, brokenLinksIn, slug } from '../../helpers/doc-links.js';

const ROOT = join(import.meta.dirname, '../../..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/**
 * Pages the README links to that are written on other branches (fleets, deployment). Until they
 * land, a link to them is not an error; once a page exists, its links and anchors are checked
 * like any other. Remove a name here when its page is merged.
 */
const WRITTEN_ELSEWHERE: string[] = [];

describe('documentation links', () => {
  it('README.md and every docs/ page: each relative link names a file that exists, each anchor a heading', () => {
    expect(PAGES.length).toBeGreaterThan(5);
    expect(brokenLinksIn(PAGES, ROOT, WRITTEN_ELSEWHERE)).toEqual([]);
  });

  it('every file or folder of the repository a page names in code (`src/...`, `npx tsx scripts/...`) exists', () => {
    const named: { page: string; path: string }[] = [];
    for (const page of PAGES) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      // Code blocks are code throughout; elsewhere, only code spans.
      const fences = [...text.matchAll(/^```.*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
      const spans = [...text.replace(/^```.*\n[\s\S]*?^```/gm, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      for (const code of [...fences, ...spans]) {
        for (const m of code.matchAll(/(?:^|[\s(='"])((?:src|scripts|test|packaging|systemd|deploy|docs)\/[\w./-]*[\w/])/gm)) named.push({ page, path: m[1]! });
      }
    }
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((n) => !existsSync(join(ROOT, n.path)))).toEqual([]);
  });

  it("docs/development.md's source layout names folders that exist, and every folder of src/", () => {
    const page = readFileSync(join(ROOT, 'docs/development.md'), 'utf8');
    const start = page.indexOf('## Source layout');
    const block = /```\n([\s\S]*?)```/.exec(page.slice(start))![1]!;
    const listed: string[] = [];
    let parent = '';
    for (const line of block.split('\n')) {
      const top = /^(src\/[\w./-]*\/)\s/.exec(line)?.[1];
      const sub = /^ {2}([\w-]+\/)\s/.exec(line)?.[1];
      if (top) listed.push((parent = top));
      else if (sub) listed.push(parent + sub);
    }
    expect(listed.length).toBeGreaterThan(8);
    expect(listed.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => `src/${d.name}/`);
    expect(folders.filter((f) => !listed.includes(f))).toEqual([]);
  });

  it('the README links every docs/ page, and the pages written elsewhere', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const page of [...PAGES.filter((p) => p !== 'README.md'), ...WRITTEN_ELSEWHERE]) expect(readme, page).toContain(`](${page}`);
  });

  it('slugs are GitHub’s: punctuation dropped, spaces as dashes, repeats numbered', () => {
    expect(slug('sync, plan and --json')).toBe('sync-plan-and---json');
    expect(slug('Why not `pkg`')).toBe('why-not-pkg');
    expect(slug('daemon.pid')).toBe('daemonpid');
    expect(slug("Side by side with CrowdSec, and the daemon's memory")).toBe('side-by-side-with-crowdsec-and-the-daemons-memory');
    expect([...anchorsOf('# A\n## B\n```\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
  });

  it('catches a missing file, a missing anchor and an anchor into a non-page (so the first test is not vacuous)', () => {
    const page = join(ROOT, 'docs/fixture.md');
    const md = [
      '# Fixture',
      '[ok](#fixture) [ok too](../README.md#assumptions) `[in code](nowhere.md)`',
      '```',
      '[in a fence](nowhere.md)',
      '```',
      '[gone](nowhere.md) [bad anchor](commands.md#no-such-heading) [dir anchor](performance/#x) [web](https://example.org/x)',
    ].join('\n');
    expect(brokenLinks(page, md, ROOT).map((p) => p.link)).toEqual(['nowhere.md', 'commands.md#no-such-heading', 'performance/#x']);
  });
});
