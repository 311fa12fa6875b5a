#!/usr/bin/env python3
"""Check that every import in src/ points down the stack (docs/design.md, "Layers").

An edge A -> B is counted when file A names a path (in a `use` tree, or inline
as `crate::…` / `super::…` / `self::…`) that resolves to an item defined in
file B. Paths through a module's `pub use` re-exports are followed to the file
that defines the item, so a facade `mod.rs` is not a false hub; `mod x;`
declarations are not edges. Test modules count like any other code.

Fails (exit 1) on:
  * an import cycle between files;
  * a file outside src/cli/ that imports crate::cli;
  * a file in src/gate/ that imports anything of the crate outside gate;
  * a file in src/server/ that imports crate::worker;
  * a file in src/present/ (pure text-making) that imports the store, the worker, the
    server, the command line or GitHub's I/O: of crate::github it may name only the data
    (types.rs, event.rs).

Usage: python3 scripts/check-imports.py [SRC_DIR]   (default: src)
       --edges prints every edge.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SRC = Path(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else Path("src")
PRINT_EDGES = "--edges" in sys.argv

DEF_RE = r"(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*(?:struct|enum|fn|const|static|type|trait|union|mod)\s+{name}\b"
MACRO_DEF_RE = r"macro_rules!\s*{name}\b"


def strip_comments_and_strings(text: str) -> str:
    """Blank out comments, string and char literals (keeping newlines), so paths in
    docs or messages are not counted."""
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
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
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
            # a char literal ('a', '\n', '\u{1F600}') or a lifetime ('a)
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


class File:
    def __init__(self, path: Path, module: list[str]):
        self.path = path
        self.module = module  # e.g. ["gate", "verdict"]
        self.raw = path.read_text(encoding="utf-8")
        self.code = strip_comments_and_strings(self.raw)


def module_of(path: Path) -> list[str] | None:
    rel = path.relative_to(SRC)
    parts = list(rel.parts)
    if parts in (["lib.rs"],):
        return []
    if parts == ["main.rs"]:
        return None  # the binary is its own crate
    if parts[-1] == "mod.rs":
        return parts[:-1]
    parts[-1] = parts[-1][:-3]
    return parts


files: dict[tuple[str, ...], File] = {}
for p in sorted(SRC.rglob("*.rs")):
    m = module_of(p)
    if m is not None:
        files[tuple(m)] = File(p, m)


def is_module(mod: tuple[str, ...]) -> bool:
    return mod in files


def defines(f: File, name: str) -> bool:
    return bool(re.search(DEF_RE.format(name=re.escape(name)), f.code)) or bool(
        re.search(MACRO_DEF_RE.format(name=re.escape(name)), f.code)
    )


def reexports(f: File) -> list[tuple[list[str], str]]:
    """(full path, visible name) of each `pub use` in f."""
    out = []
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", f.code):
        for path, alias in expand_tree(m.group(1)):
            out.append((path, alias))
    return out


def expand_tree(tree: str, prefix: list[str] | None = None) -> list[tuple[list[str], str]]:
    """`a::{b, c::{d as e}, f::*}` -> [(['a','b'],'b'), (['a','c','d'],'e'), (['a','f','*'],'*')]."""
    prefix = prefix or []
    tree = tree.strip()
    results = []
    # split top-level on commas
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(tree):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(tree[start:i])
            start = i + 1
    parts.append(tree[start:])
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if "{" in part:
            head, rest = part.split("{", 1)
            rest = rest.rsplit("}", 1)[0]
            head_segs = [s for s in head.strip().rstrip(":").split("::") if s.strip()]
            results.extend(expand_tree(rest, prefix + [s.strip() for s in head_segs]))
        else:
            alias = None
            m = re.match(r"(.*?)\s+as\s+(\w+)$", part)
            if m:
                part, alias = m.group(1), m.group(2)
            segs = [s.strip() for s in part.split("::") if s.strip()]
            full = prefix + segs
            if full and full[-1] == "self":
                full = full[:-1]
            if not full:
                continue
            results.append((full, alias or full[-1]))
    return results


def absolute(path: list[str], module: list[str]) -> list[str] | None:
    """Make a path absolute (relative to the crate root); None for external crates."""
    if not path:
        return None
    head = path[0]
    if head == "crate":
        return path[1:]
    if head == "self":
        return module + path[1:]
    if head == "super":
        mod = list(module)
        rest = list(path)
        while rest and rest[0] == "super":
            if not mod:
                return None
            mod = mod[:-1]
            rest = rest[1:]
        return mod + rest
    # 2018 uniform paths: a child module of the current module
    if is_module(tuple(module + [head])):
        return module + path
    return None


def resolve(path: list[str], depth: int = 0) -> Path | None:
    """The file defining the item an absolute path names (or the module file itself)."""
    if depth > 10:
        return None
    mod: list[str] = []
    i = 0
    while i < len(path) and is_module(tuple(mod + [path[i]])):
        mod.append(path[i])
        i += 1
    f = files.get(tuple(mod))
    if f is None:
        return None
    if i == len(path) or path[i] == "*":
        return f.path
    name = path[i]
    if defines(f, name):
        return f.path
    for full, alias in reexports(f):
        target = absolute(full, f.module)
        if target is None:
            continue
        if alias == name:
            return resolve(target + path[i + 1 :], depth + 1) or f.path
        if alias == "*":
            inner = resolve(target + [name] + path[i + 1 :], depth + 1)
            if inner is not None and inner != files[tuple(target)].path if tuple(target) in files else inner is not None:
                return inner
            if tuple(target) in files and defines(files[tuple(target)], name):
                return files[tuple(target)].path
    return f.path


def inline_mod_spans(code: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each inline `mod name { ... }` block."""
    spans = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
            j += 1
        spans.append((m.start(), j, m.group(1)))
    return spans


def module_at(f: File, pos: int, spans) -> list[str]:
    mod = list(f.module)
    for start, end, name in spans:
        if start <= pos < end:
            mod.append(name)
    return mod


def paths_in(f: File):
    """(absolute path, line) of every crate-internal path f names."""
    spans = inline_mod_spans(f.code)
    seen = []
    for m in re.finditer(r"\buse\s+([^;]+);", f.code):
        mod = module_at(f, m.start(), spans)
        line = f.code.count("\n", 0, m.start()) + 1
        for full, _alias in expand_tree(m.group(1)):
            ab = absolute(full, mod)
            if ab is not None:
                seen.append((ab, line, mod))
    code_wo_use = re.sub(r"\buse\s+[^;]+;", lambda m: " " * len(m.group(0)), f.code)
    for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", code_wo_use):
        mod = module_at(f, m.start(), spans)
        line = f.code.count("\n", 0, m.start()) + 1
        ab = absolute(m.group(0).split("::"), mod)
        if ab is not None:
            seen.append((ab, line, mod))
    return seen


def rel(p: Path) -> str:
    return str(p.relative_to(SRC.parent)) if SRC.parent != Path("") else str(p)


# What of crate::github src/present/ may name: GitHub's data, never its I/O.
PRESENT_GITHUB_DATA = {("github", "types.rs"), ("github", "event.rs")}

edges: dict[Path, dict[Path, tuple[int, str]]] = {}
problems: list[str] = []
for f in files.values():
    out = edges.setdefault(f.path, {})
    for ab, line, _mod in paths_in(f):
        target = resolve(ab)
        if target is None or target == f.path:
            continue
        out.setdefault(target, (line, "::".join(["crate"] + ab)))
        top = ab[0] if ab else ""
        in_cli = f.module[:1] == ["cli"]
        if top == "cli" and not in_cli:
            problems.append(f"{rel(f.path)}:{line}: imports the command line ({'::'.join(ab)}); nothing outside src/cli/ may")
        # `use crate as flakegate;` (ab empty) only lets test code shared with the integration
        # tests name the library as they do; what it then names is checked where it is defined.
        if f.module[:1] == ["gate"] and ab and top != "gate":
            problems.append(f"{rel(f.path)}:{line}: the gate imports crate::{'::'.join(ab)}; src/gate/ imports only gate")
        if f.module[:1] == ["server"] and top == "worker":
            problems.append(f"{rel(f.path)}:{line}: the server imports the worker ({'::'.join(ab)})")
        if f.module[:1] == ["present"]:
            github_io = top == "github" and target.relative_to(SRC).parts not in PRESENT_GITHUB_DATA
            if top in ("store", "worker", "server", "cli") or github_io:
                problems.append(
                    f"{rel(f.path)}:{line}: present/ imports crate::{'::'.join(ab)}; it only makes text: no store, "
                    "worker, server, command line or GitHub I/O (of github, only types.rs and event.rs)"
                )

if PRINT_EDGES:
    for a in sorted(edges):
        for b, (line, path) in sorted(edges[a].items()):
            print(f"{rel(a)}:{line} -> {rel(b)}  ({path})")

# Tarjan's strongly connected components.
index_of: dict[Path, int] = {}
low: dict[Path, int] = {}
stack: list[Path] = []
on_stack: set[Path] = set()
sccs: list[list[Path]] = []
counter = [0]


def strongconnect(v: Path):
    work = [(v, iter(sorted(edges.get(v, {}))))]
    index_of[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on_stack.add(v)
    while work:
        node, it = work[-1]
        advanced = False
        for w in it:
            if w not in index_of:
                index_of[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(edges.get(w, {})))))
                advanced = True
                break
            if w in on_stack:
                low[node] = min(low[node], index_of[w])
        if advanced:
            continue
        work.pop()
        if work:
            parent = work[-1][0]
            low[parent] = min(low[parent], low[node])
        if low[node] == index_of[node]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == node:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))


for v in sorted(edges):
    if v not in index_of:
        strongconnect(v)

for comp in sccs:
    members = set(comp)
    lines = []
    for a in comp:
        for b, (line, path) in sorted(edges[a].items()):
            if b in members:
                lines.append(f"    {rel(a)}:{line} -> {rel(b)}  ({path})")
    problems.append("import cycle between " + ", ".join(rel(p) for p in comp) + ":\n" + "\n".join(lines))

n_edges = sum(len(v) for v in edges.values())
if problems:
    for p in problems:
        print(p)
    print(f"check-imports: {len(problems)} problem(s) in {len(files)} files, {n_edges} edges")
    sys.exit(1)
print(f"check-imports: {len(files)} files, {n_edges} edges, no cycle, every import points down")
