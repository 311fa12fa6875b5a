#!/usr/bin/env python3
"""Report functions over 150 lines and non-test files over 800 lines in src/.

A function is counted from the line of its `fn` to the line of its closing
brace; every function counts, test functions too (nested ones are measured on
their own and inside their parent). A file counts all its lines, inline test
modules included, unless it is test code: a `tests.rs`, or a file whose `mod`
declaration carries `#[cfg(test)]`.

Either may opt out with a stated reason: a comment line containing `size: `
followed by the reason — for a file, among its leading comment lines (a `//!`
line of its module doc, say); for a function, among the comment and attribute
lines directly above its `fn` line (`// size: one match over every …`).

Exits 1 when something is over its limit without a reason.

Usage: python3 scripts/check-sizes.py [SRC_DIR]   (default: src)
       --max-fn N, --max-file N change the limits.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MAX_FN = 150
MAX_FILE = 800
OPT_OUT = re.compile(r"//.*\bsize: \S")


def args() -> tuple[Path, int, int]:
    src, max_fn, max_file = Path("src"), MAX_FN, MAX_FILE
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--max-fn":
            max_fn = int(next(it))
        elif a == "--max-file":
            max_file = int(next(it))
        elif a.startswith("-"):
            sys.exit(f"check-sizes: unknown option {a}\n{__doc__}")
        else:
            src = Path(a)
    return src, max_fn, max_file


def blank_comments_and_strings(text: str) -> str:
    """The code with comments, string and char literals blanked (newlines kept), so
    braces in them are not counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "rb" and re.match(r'b?r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "'":
            # a char literal ('a', '\n', '\u{7b}', b'{') or a lifetime ('a)
            m = re.match(r"'(\\.[^']*|[^'\\])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def functions(code: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every function with a body."""
    found = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        # The body starts at the first `{` outside the signature's () and []
        # (`-> [u8; 4]`); a `;` there first means a declaration without one.
        depth, j = 0, m.end()
        while j < len(code):
            ch = code[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch == ";":
                j = -1
                break
            elif depth == 0 and ch == "{":
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        braces, k = 0, j
        while k < len(code):
            if code[k] == "{":
                braces += 1
            elif code[k] == "}":
                braces -= 1
                if braces == 0:
                    break
            k += 1
        found.append((m.group(1), line_of(code, m.start()), line_of(code, k)))
    return found


def fn_opted_out(lines: list[str], fn_line: int) -> bool:
    """A `size: ` comment among the comment and attribute lines right above the function."""
    i = fn_line - 2  # the line above, 0-based
    while i >= 0:
        s = lines[i].strip()
        if s.startswith("//"):
            if OPT_OUT.search(s):
                return True
        elif not s.startswith("#["):
            return False
        i -= 1
    return False


def file_opted_out(lines: list[str]) -> bool:
    """A `size: ` comment among the file's leading comment (and inner attribute) lines."""
    for line in lines:
        s = line.strip()
        if not s or s.startswith("#!["):
            continue
        if not s.startswith("//"):
            return False
        if OPT_OUT.search(s):
            return True
    return False


def test_files(src: Path) -> set[Path]:
    """Files declared by a `mod` under `#[cfg(test)]` (and their submodules), and `tests.rs`."""
    out: set[Path] = set()
    for p in src.rglob("*.rs"):
        if p.name == "tests.rs":
            out.add(p)
        text = p.read_text(encoding="utf-8")
        pattern = r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;"
        for m in re.finditer(pattern, text):
            attrs = m.group(0)
            path = re.search(r'#\[path\s*=\s*"([^"]+)"\]', attrs)
            name = m.group(1)
            # A module's children live beside mod.rs/lib.rs, else in the directory named after it.
            base = p.parent if p.name in ("mod.rs", "lib.rs", "main.rs") else p.parent / p.stem
            if path:
                candidates = [p.parent / path.group(1)]
            else:
                candidates = [base / f"{name}.rs", base / name / "mod.rs"]
            for c in candidates:
                if c.exists():
                    out.add(c.resolve())
                    if c.name == "mod.rs":
                        out.update(q.resolve() for q in c.parent.rglob("*.rs"))
                    else:
                        out.update(q.resolve() for q in (c.parent / c.stem).rglob("*.rs"))
    return {p.resolve() for p in out}


def main() -> int:
    src, max_fn, max_file = args()
    tests = test_files(src)
    problems = []
    for p in sorted(src.rglob("*.rs")):
        text = p.read_text(encoding="utf-8")
        lines = text.split("\n")
        n_lines = len(lines) - (1 if text.endswith("\n") else 0)
        if n_lines > max_file and p.resolve() not in tests and not file_opted_out(lines):
            problems.append(f"{p}: {n_lines} lines (over {max_file}); split it by concern, or state why it stays whole in a `//! size: …` line")
        for name, first, last in functions(blank_comments_and_strings(text)):
            length = last - first + 1
            if length > max_fn and not fn_opted_out(lines, first):
                problems.append(f"{p}:{first}: fn {name} is {length} lines (over {max_fn}); split it, or state why not in a `// size: …` line above it")
    for line in problems:
        print(line)
    if problems:
        print(f"check-sizes: {len(problems)} over the limits (functions {max_fn} lines, files {max_file})")
        return 1
    print(f"check-sizes: no function over {max_fn} lines, no file over {max_file} lines (test code excepted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
