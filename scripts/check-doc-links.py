#!/usr/bin/env python3
"""Check that every relative link in README.md and docs/*.md leads somewhere.

A link `[text](path)` must name a file or directory that exists (relative to the
page), and a link with `#anchor` — to another page or to the page itself — must
name a heading of that markdown page, by GitHub's slugs: lowercase, punctuation
other than `-` and `_` dropped, each space a `-`, a repeated heading suffixed
`-1`, `-2`, … Links in fenced code blocks and code spans are not links, and
neither are `#` lines inside fences. Absolute URLs are not fetched.

Usage: python3 scripts/check-doc-links.py   (exit 1, listing each bad link)
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# An inline link or image: [text](target) or [text](target "title").
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def prose_lines(text):
    """The page's lines outside fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        yield number, line


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def check(page):
    problems = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub("", line)
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto:
            where = f"{page.relative_to(ROOT)}:{number}: {target}"
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                problems.append(f"{where}: no such file")
                continue
            if anchor:
                if dest.suffix != ".md" or dest.is_dir():
                    problems.append(f"{where}: an anchor into a page that is not markdown")
                elif anchor not in anchors(dest):
                    problems.append(f"{where}: no heading with that anchor in {dest.relative_to(ROOT)}")
    return problems


def main():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    problems = [p for page in pages for p in check(page)]
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} broken link(s) in README.md and docs/", file=sys.stderr)
        return 1
    print(f"links ok in {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
