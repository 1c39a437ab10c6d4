#!/usr/bin/env python3
"""Layering checker for sketchdb (Python 3.11, standard library only).

Usage:
    python3 .ci/check_layout.py [--root DIR] [--strict-tests] [--quiet]
    python3 .ci/check_layout.py --self-test

Reads every crate rooted under DIR/src (the library at src/lib.rs, binaries at
src/main.rs, src/bin/*.rs and src/bin/*/main.rs), follows `mod` declarations (with
`#[path]`) to build the module tree, resolves `use` trees and `crate::`/`self::`/`super::`
paths in code to the file that defines the named item (following `use` re-exports, so a
`mod.rs` face is transparent), and reports, with file:line:

  (a) layer   a library module naming a module of a higher layer (LAYERS below; every
              module a path passes through counts, the crate root's re-exports excepted);
              a binary module declaring a file outside src/bin (binaries reach the
              library only through `sketchdb::` paths);
  (b) cycle   a strongly connected set of two or more files whose item imports form a
              cycle (Tarjan's algorithm over the file graph);
  (c) redb    the word `redb` outside src/storage/ (code, comments and strings alike,
              as `rg -l redb src` sees it); src/lib.rs may mention it in comments;
  (d) unsafe  the `unsafe` keyword in code outside src/simd/.

Code under `#[cfg(test)]` or `#[test]` (test modules, test files, test functions) is
exempt from (a) and (b) unless --strict-tests is given: unit tests of a low layer may
build their fixtures through the public `Database`.

Exit status: 0 when nothing is reported, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# Layer rank of each top-level library module: a module may name modules of its own layer
# or of a strictly lower rank. Two layers of equal rank are siblings and may not name each
# other. Extend here (e.g. a reader layer `io` between sketch and db).
LAYERS: dict[str, int] = {
    "simd": 0,
    "sketch": 1,
    "codec": 2,
    "io": 3,  # readers of corpora: below storage, above codec (they use its key limit)
    "input": 3,
    "storage": 4,
    "index": 5,
    "planner": 6,
    "error": 7,  # src/error.rs: the root Error, wrapping every layer's error
    "db": 8,
    "admin": 9,
    "testing": 10,
    # src/lib.rs's inline expert modules: re-export facades over the layers.
    "lsh": 11,
    "simhash": 11,
    "plan": 11,
    "estimate": 11,
    "signature": 11,
}
# Modules whose own imports are not checked against the table (they may import all).
IMPORTS_ALL = {"error", "testing", "lsh", "simhash", "plan", "estimate", "signature"}
# Where `redb` may be named (comments or code), and where `unsafe` may appear.
REDB_DIRS = ("src/storage/",)
REDB_COMMENT_FILES = ("src/lib.rs",)
UNSAFE_DIRS = ("src/simd/",)
PATH_ROOTS = {"crate", "$crate", "self", "super"}


# ----------------------------------------------------------------------------- lexing


@dataclass
class Tok:
    kind: str  # "id", "p" (punctuation), "lit"
    text: str
    line: int
    test: bool = False  # inside #[cfg(test)] / #[test] code
    attr: bool = False  # inside an attribute


@dataclass
class Lexed:
    toks: list[Tok]
    comments: list[tuple[int, str]]  # (line, text)
    strings: list[tuple[int, str]]


_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUM = re.compile(r"[0-9][0-9A-Za-z_.]*")
_CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]+\}|.)|[^\\'\n])'")


def lex(src: str) -> Lexed:
    toks: list[Tok] = []
    comments: list[tuple[int, str]] = []
    strings: list[tuple[int, str]] = []
    i, n, line = 0, len(src), 1
    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            comments.append((line, src[i:j]))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            comments.append((line, src[i:j]))
            line += src.count("\n", i, j)
            i = j
        elif m := re.compile(r'b?r(#*)"').match(src, i):
            end = src.find('"' + m.group(1), m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            strings.append((line, src[i:end]))
            toks.append(Tok("lit", '""', line))
            line += src.count("\n", i, end)
            i = end
        elif c == '"' or src.startswith('b"', i):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            strings.append((line, src[i : j + 1]))
            toks.append(Tok("lit", '""', line))
            line += src.count("\n", i, j + 1)
            i = j + 1
        elif c == "'" or src.startswith("b'", i):
            m = _CHAR.match(src, i + (1 if c == "b" else 0))
            if m:
                toks.append(Tok("lit", "''", line))
                i = m.end()
            else:  # a lifetime or label
                m = _ID.match(src, i + 1)
                i = m.end() if m else i + 1
        elif src.startswith("r#", i) and _ID.match(src, i + 2):
            m = _ID.match(src, i + 2)
            toks.append(Tok("id", m.group(0), line))
            i = m.end()
        elif m := _ID.match(src, i):
            toks.append(Tok("id", m.group(0), line))
            i = m.end()
        elif m := _NUM.match(src, i):
            toks.append(Tok("lit", "0", line))
            i = m.end()
        elif src.startswith("::", i):
            toks.append(Tok("p", "::", line))
            i += 2
        elif c == "$" and src.startswith("crate", i + 1) and not _ID.match(src, i + 6):
            toks.append(Tok("id", "$crate", line))
            i += 6
        else:
            toks.append(Tok("p", c, line))
            i += 1
    mark_attributes_and_tests(toks)
    return Lexed(toks, comments, strings)


def _skip_group(toks: list[Tok], i: int) -> int:
    """Index just past the group opened at toks[i] ('(', '[' or '{')."""
    depth = 0
    while i < len(toks):
        t = toks[i].text if toks[i].kind == "p" else ""
        if t in "([{" and t:
            depth += 1
        elif t in ")]}" and t:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _is_test_attr(body: list[Tok]) -> bool:
    words = [t.text for t in body if t.kind == "id"]
    if words == ["test"]:
        return True
    return bool(words) and words[0] == "cfg" and "test" in words and "not" not in words


def _item_end(toks: list[Tok], i: int) -> int:
    """Index just past the item starting at toks[i] (after its outer attributes)."""
    while i < len(toks):
        t = toks[i]
        if t.kind == "p" and t.text in "([":
            i = _skip_group(toks, i)
        elif t.kind == "p" and t.text == "{":
            return _skip_group(toks, i)
        elif t.kind == "p" and t.text == ";":
            return i + 1
        else:
            i += 1
    return i


def mark_attributes_and_tests(toks: list[Tok]) -> None:
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "p" and t.text == "#":
            inner = i + 1 < len(toks) and toks[i + 1].text == "!"
            lb = i + 2 if inner else i + 1
            if lb < len(toks) and toks[lb].text == "[":
                end = _skip_group(toks, lb)
                for k in range(i, end):
                    toks[k].attr = True
                if _is_test_attr(toks[lb + 1 : end - 1]):
                    if inner:  # #![cfg(test)]: the rest of the enclosing scope
                        stop = len(toks)
                    else:
                        j = end
                        while j < len(toks) and toks[j].text == "#" and j + 1 < len(toks) and toks[j + 1].text == "[":
                            j = _skip_group(toks, j + 1)
                        stop = _item_end(toks, j)
                    for k in range(i, stop):
                        toks[k].test = True
                i = end
                continue
        i += 1


# ------------------------------------------------------------------------ module tree


@dataclass
class Use:
    alias: str | None  # None for a glob
    path: list[str]
    line: int
    test: bool
    scope: "Module"


@dataclass
class Module:
    name: str
    parent: "Module | None"
    file: str  # repository-relative path of the file holding it
    crate: "Crate"
    test: bool = False
    inline: bool = False
    children: dict[str, "Module"] = field(default_factory=dict)
    aliases: dict[str, Use] = field(default_factory=dict)
    globs: list[Use] = field(default_factory=list)
    line: int = 1

    @property
    def path(self) -> list[str]:
        out, m = [], self
        while m.parent is not None:
            out.append(m.name)
            m = m.parent
        return out[::-1]

    def display(self) -> str:
        return "::".join([self.crate.name] + self.path)


@dataclass
class Ref:
    """A path that names something: a `use` or a path in code."""

    file: str
    line: int
    scope: Module
    path: list[str]
    test: bool
    is_use: bool
    glob: bool = False


@dataclass
class Crate:
    name: str
    root_file: str
    is_lib: bool
    root: Module | None = None
    refs: list[Ref] = field(default_factory=list)
    problems: list[tuple[str, str, int, str]] = field(default_factory=list)


class Tree:
    def __init__(self, base: Path):
        self.base = base
        self.lexed: dict[str, Lexed] = {}
        self.crates: list[Crate] = []
        self.file_modules: dict[str, Module] = {}

    def read(self, rel: str) -> Lexed | None:
        if rel not in self.lexed:
            p = self.base / rel
            if not p.is_file():
                return None
            self.lexed[rel] = lex(p.read_text(encoding="utf-8", errors="replace"))
        return self.lexed[rel]

    def load_crate(self, crate: Crate) -> None:
        crate.root = Module("", None, crate.root_file, crate)
        self.crates.append(crate)
        self._load_file(crate.root, crate.root_file, True, [])

    def _load_file(self, mod: Module, rel: str, mod_rs: bool, stack: list[str]) -> None:
        lx = self.read(rel)
        if lx is None:
            return
        self.file_modules.setdefault(rel, mod)
        d = os.path.dirname(rel)
        # Directory holding the files of modules declared in this file.
        child_dir = d if mod_rs else os.path.join(d, os.path.splitext(os.path.basename(rel))[0])
        self._parse(mod, rel, lx.toks, 0, len(lx.toks), child_dir, d, stack)

    def _parse(self, mod, rel, toks, i, end, child_dir, path_dir, stack) -> None:
        """Walk toks[i:end] of module `mod` (file `rel`)."""
        pending_path: str | None = None
        while i < end:
            t = toks[i]
            if t.attr:
                if t.kind == "id" and t.text == "path" and i + 2 < end and toks[i + 1].text == "=":
                    m = self._string_at(rel, toks[i + 2].line)
                    pending_path = m
                i += 1
                continue
            if t.kind == "id" and t.text == "mod" and i + 2 < end and toks[i + 1].kind == "id":
                name, nxt = toks[i + 1].text, toks[i + 2]
                if nxt.text == ";":
                    child = Module(name, mod, rel, mod.crate, test=t.test or mod.test, line=t.line)
                    mod.children[name] = child
                    if pending_path is not None:
                        f = os.path.normpath(os.path.join(path_dir, pending_path))
                        is_mod_rs = os.path.basename(f) == "mod.rs"
                    else:
                        f = os.path.join(child_dir, name + ".rs")
                        is_mod_rs = False
                        if not (self.base / f).is_file():
                            f, is_mod_rs = os.path.join(child_dir, name, "mod.rs"), True
                    child.file = f
                    if not mod.crate.is_lib and not f.startswith("src/bin/"):
                        mod.crate.problems.append(
                            ("layer", rel, t.line, f"binary {mod.crate.name} includes {f}: use sketchdb:: paths")
                        )
                    if f in stack or not (self.base / f).is_file():
                        mod.crate.problems.append(("missing", rel, t.line, f"mod {name}: no file {f}"))
                    else:
                        self._load_file(child, f, is_mod_rs, stack + [rel])
                    pending_path = None
                    i += 3
                    continue
                if nxt.text == "{":
                    close = _skip_group(toks, i + 2)
                    child = Module(name, mod, rel, mod.crate, test=t.test or mod.test, inline=True, line=t.line)
                    mod.children[name] = child
                    sub = os.path.join(child_dir, name)
                    self._parse(child, rel, toks, i + 3, close - 1, sub, sub, stack)
                    pending_path = None
                    i = close
                    continue
            if t.kind == "id" and t.text == "use" and not (i > 0 and toks[i - 1].text == "::"):
                j = i + 1
                while j < end and toks[j].text != ";":
                    j = _skip_group(toks, j) if toks[j].text == "{" else j + 1
                for alias, path in parse_use_tree(toks[i + 1 : j]):
                    u = Use(alias, path, t.line, t.test or mod.test, mod)
                    if alias is None:
                        mod.globs.append(u)
                    elif alias != "_":
                        mod.aliases[alias] = u
                    mod.crate.refs.append(Ref(rel, t.line, mod, path, u.test, True, alias is None))
                i = j + 1
                continue
            if t.kind == "id" and t.text == "in" and i > 1 and toks[i - 1].text == "(" and toks[i - 2].text == "pub":
                i = _skip_group(toks, i - 1)  # pub(in crate::x): a visibility, not a use
                continue
            if t.kind == "id" and i + 1 < end and toks[i + 1].text == "::" and not (i > 0 and toks[i - 1].text == "::"):
                path, j = [t.text], i + 1
                while j + 1 < end and toks[j].text == "::" and toks[j + 1].kind == "id":
                    path.append(toks[j + 1].text)
                    j += 2
                if len(path) > 1:
                    mod.crate.refs.append(Ref(rel, t.line, mod, path, t.test or mod.test, False))
                i = j
                continue
            i += 1

    def _string_at(self, rel: str, line: int) -> str | None:
        for ln, s in self.lexed[rel].strings:
            if ln == line:
                m = re.match(r'r?#*"(.*)"#*$', s, re.S)
                return m.group(1) if m else None
        return None


def parse_use_tree(toks: list[Tok]) -> list[tuple[str | None, list[str]]]:
    """(alias, full path) for each leaf of a use tree; alias None marks a glob."""
    toks = [t for t in toks if not t.attr]
    # Drop a leading visibility: pub, pub(crate), pub(super), pub(in path).
    if toks and toks[0].text == "pub":
        toks = toks[_skip_group(toks, 1) :] if len(toks) > 1 and toks[1].text == "(" else toks[1:]
    out: list[tuple[str | None, list[str]]] = []

    def tree(i: int, prefix: list[str]) -> int:
        path = list(prefix)
        if i < len(toks) and toks[i].text == "::":
            i += 1
        while i < len(toks):
            t = toks[i]
            if t.text == "{":
                i += 1
                while i < len(toks) and toks[i].text != "}":
                    i = tree(i, path)
                    if i < len(toks) and toks[i].text == ",":
                        i += 1
                return i + 1
            if t.text == "*":
                out.append((None, path))
                return i + 1
            if t.kind == "id":
                if t.text == "self" and path:
                    seg_path = path
                else:
                    seg_path = path + [t.text]
                i += 1
                if i < len(toks) and toks[i].text == "::":
                    path = seg_path
                    i += 1
                    continue
                alias = seg_path[-1] if seg_path else t.text
                if i + 1 < len(toks) and toks[i].text == "as":
                    alias = toks[i + 1].text
                    i += 2
                out.append((alias, seg_path))
                return i
            return i + 1
        return i

    tree(0, [])
    return out


# ------------------------------------------------------------------------- resolution


@dataclass
class Resolved:
    file: str  # the file defining the item, or holding the module
    via: list[Module]  # modules passed through while resolving
    module: Module | None  # the module itself when the path names a module


def resolve(scope: Module, path: list[str], depth: int = 0) -> Resolved | None:
    """Resolve a path seen in `scope`; None when it leaves the crate (std, deps) or is local."""
    if depth > 16 or not path:
        return None
    first = path[0]
    via: list[Module] = []
    i = 0
    if first in ("crate", "$crate"):
        cur, i = scope.crate.root, 1
    elif first == "self":
        cur, i = scope, 1
    elif first == "super":
        cur = scope
        while i < len(path) and path[i] == "super":
            cur = cur.parent if cur.parent is not None else cur
            i += 1
    else:
        cur = _enclosing_binding(scope, first, depth)
        if cur is None:
            return None
    while i < len(path):
        seg = path[i]
        if seg in cur.children:
            cur = cur.children[seg]
            via.append(cur)
            i += 1
            continue
        u = cur.aliases.get(seg)
        if u is not None and u.path != [seg]:
            r = resolve(u.scope, u.path, depth + 1)
            if r is None:
                return None
            via.extend(r.via)
            if i + 1 == len(path) or r.module is None:
                return Resolved(r.file, via, r.module if i + 1 == len(path) else None)
            cur = r.module
            i += 1
            continue
        tm = _glob_holding(cur, seg, depth)
        if tm is not None:
            cur = tm
            continue
        # An item defined in `cur` (type, fn, const, macro, enum with its variants ...).
        return Resolved(cur.file, via, None)
    return Resolved(cur.file, via, cur)


def _glob_holding(scope: Module, name: str, depth: int) -> Module | None:
    """The module a glob import of `scope` brings `name` from, if it binds it there."""
    for g in scope.globs:
        r = resolve(g.scope, g.path, depth + 1)
        tm = r.module if r else None
        if tm is not None and tm is not scope and (name in tm.children or name in tm.aliases):
            return tm
    return None


def _enclosing_binding(scope: Module, first: str, depth: int) -> Module | None:
    """Module in which a relative first segment is bound (child module or `use` alias)."""
    if first in scope.children:
        return scope
    u = scope.aliases.get(first)
    if u is not None:
        return scope if u.path != [first] else None  # `use redb;` names the extern crate
    return _glob_holding(scope, first, depth)


def layer_of(m: Module) -> str | None:
    p = m.path
    if not m.crate.is_lib or not p:
        return None
    return p[0]


# ----------------------------------------------------------------------------- checks


@dataclass
class Finding:
    kind: str
    file: str
    line: int
    msg: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: [{self.kind}] {self.msg}"


def discover(base: Path) -> list[Crate]:
    crates = []
    if (base / "src/lib.rs").is_file():
        crates.append(Crate("crate", "src/lib.rs", True))
    if (base / "src/main.rs").is_file():
        crates.append(Crate("main", "src/main.rs", False))
    bindir = base / "src/bin"
    if bindir.is_dir():
        for p in sorted(bindir.iterdir()):
            if p.is_file() and p.suffix == ".rs":
                crates.append(Crate(p.stem, f"src/bin/{p.name}", False))
            elif p.is_dir() and (p / "main.rs").is_file():
                crates.append(Crate(p.name, f"src/bin/{p.name}/main.rs", False))
    return crates


def check(base: Path, strict_tests: bool = False) -> tuple[list[Finding], dict]:
    tree = Tree(base)
    for c in discover(base):
        tree.load_crate(c)
    findings: list[Finding] = []
    stats = {"files": 0, "refs": 0, "edges": 0, "exempt": 0, "orphans": []}

    for c in tree.crates:
        for kind, f, ln, msg in c.problems:
            findings.append(Finding(kind, f, ln, msg))

    # (a) layers and the file graph for (b)
    graph: dict[str, set[str]] = {}
    edge_line: dict[tuple[str, str], int] = {}
    for c in tree.crates:
        for ref in c.refs:
            stats["refs"] += 1
            r = resolve(ref.scope, ref.path)
            if r is None:
                continue
            if ref.test and not strict_tests:
                stats["exempt"] += 1
                continue
            if c.is_lib:
                src_layer = layer_of(ref.scope)
                if src_layer is not None and src_layer not in IMPORTS_ALL and src_layer in LAYERS:
                    worst = None
                    for m in r.via:
                        lay = layer_of(m)
                        if lay is None or lay == src_layer or lay not in LAYERS:
                            continue
                        if LAYERS[lay] >= LAYERS[src_layer] and (worst is None or LAYERS[lay] > LAYERS[worst]):
                            worst = lay
                    if worst is not None:
                        findings.append(
                            Finding(
                                "layer",
                                ref.file,
                                ref.line,
                                f"{src_layer} (rank {LAYERS[src_layer]}) names {worst} (rank {LAYERS[worst]}): "
                                f"{'::'.join(ref.path)}",
                            )
                        )
                elif src_layer is not None and src_layer not in LAYERS and src_layer not in IMPORTS_ALL:
                    pass  # an unlisted top-level module: reported once below
            target = r.file
            if target is None or target == ref.file or target == c.root_file:
                continue
            # A path that only names a module is a namespace, not a dependency; a glob
            # import of a module depends on the file holding it.
            if r.module is not None and not ref.glob:
                continue
            graph.setdefault(ref.file, set()).add(target)
            edge_line.setdefault((ref.file, target), ref.line)

    for c in tree.crates:
        if c.is_lib and c.root is not None:
            for name, m in c.root.children.items():
                if name not in LAYERS:
                    findings.append(Finding("layer", m.file, 1, f"top-level module `{name}` has no layer in LAYERS"))

    # (b) cycles
    stats["edges"] = sum(len(v) for v in graph.values())
    stats["graph"] = {a: sorted(b) for a, b in sorted(graph.items())}
    for scc in tarjan(graph):
        if len(scc) < 2:
            continue
        scc = sorted(scc)
        cyc = _a_cycle(graph, set(scc), scc[0])
        hops = " -> ".join(f"{a}:{edge_line[(a, b)]}" for a, b in zip(cyc, cyc[1:] + cyc[:1]))
        findings.append(Finding("cycle", scc[0], 1, f"{len(scc)} files import each other, e.g. {hops} -> {cyc[0]}"))

    # (c) redb and (d) unsafe
    seen = set(tree.file_modules)
    stats["files"] = len(seen)
    for p in sorted((base / "src").rglob("*.rs")):
        rel = p.relative_to(base).as_posix()
        if rel not in seen:
            stats["orphans"].append(rel)
            tree.read(rel)
    for rel, lx in sorted(tree.lexed.items()):
        if not rel.startswith(REDB_DIRS):
            lines = {t.line for t in lx.toks if t.kind == "id" and t.text == "redb"}
            for ln in sorted(lines):
                findings.append(Finding("redb", rel, ln, "redb named in code outside src/storage/"))
            if rel not in REDB_COMMENT_FILES:
                for ln, text in lx.comments + lx.strings:
                    if re.search(r"redb", text, re.I):
                        findings.append(Finding("redb", rel, ln, "redb named in a comment or string outside src/storage/"))
        if not rel.startswith(UNSAFE_DIRS):
            for ln in sorted({t.line for t in lx.toks if t.kind == "id" and t.text == "unsafe" and not t.attr}):
                findings.append(Finding("unsafe", rel, ln, "unsafe outside src/simd/"))
    findings.sort(key=lambda f: (f.kind, f.file, f.line))
    return findings, stats


def tarjan(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]
    nodes = set(graph) | {b for v in graph.values() for b in v}

    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    pushed = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _a_cycle(graph: dict[str, set[str]], comp: set[str], start: str) -> list[str]:
    """A shortest cycle through `start` inside one strongly connected component (BFS)."""
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in comp:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return path[::-1]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def report(findings: list[Finding], stats: dict, quiet: bool) -> None:
    if not quiet:
        for f in findings:
            print(f)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    files_by_kind: dict[str, set[str]] = {}
    for f in findings:
        files_by_kind.setdefault(f.kind, set()).add(f.file)
    print()
    print(
        f"check_layout: {stats['files']} files, {stats['refs']} paths, {stats['edges']} file edges, "
        f"{stats['exempt']} test-only paths exempt from layer/cycle checks"
    )
    if stats["orphans"]:
        print(f"  not reached from a crate root (checked for redb/unsafe only): {', '.join(stats['orphans'])}")
    for kind, label in [
        ("layer", "upward imports"),
        ("cycle", "file cycles"),
        ("redb", "redb outside storage"),
        ("unsafe", "unsafe outside simd"),
        ("mod", "unresolved mod declarations"),
    ]:
        n = counts.get(kind, 0)
        print(f"  {label:<28} {n:>4}" + (f"  in {len(files_by_kind[kind])} files" if n else ""))
    print("FAIL" if findings else "OK")


# ------------------------------------------------------------------------- self-tests


def _tree(files: dict[str, str]) -> Path:
    d = Path(tempfile.mkdtemp(prefix="check_layout_"))
    for rel, text in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return d


def _kinds(files: dict[str, str], strict: bool = False) -> list[tuple[str, str, int]]:
    found, _ = check(_tree(files), strict)
    return [(f.kind, f.file, f.line) for f in found]


def self_test() -> int:
    cases = 0

    def expect(name: str, got, want) -> None:
        nonlocal cases
        cases += 1
        if got != want:
            raise AssertionError(f"{name}: got {got!r}, want {want!r}")

    lib = "mod sketch;\nmod index;\nmod db;\npub use db::Database;\n"
    # An upward `use`, through the root's re-export and directly; a downward one is fine.
    files = {
        "src/lib.rs": lib,
        "src/sketch/mod.rs": "pub(crate) struct S;\n",
        "src/db/mod.rs": "pub struct Database;\n",
        "src/index/mod.rs": "use crate::sketch::S;\nuse crate::Database;\n\nfn f() { crate::db::Database; }\n",
    }
    expect("upward", _kinds(files), [("layer", "src/index/mod.rs", 2), ("layer", "src/index/mod.rs", 4)])

    # super:: from a nested file and from an inline module; use groups, self and aliases.
    files = {
        "src/lib.rs": "mod sketch;\nmod index;\n",
        "src/sketch/mod.rs": "mod a;\nmod b;\n",
        "src/sketch/a.rs": "use super::b::{self as bee, B};\npub(crate) struct A;\nfn f() { bee::g(); }\n",
        "src/sketch/b.rs": "pub(crate) struct B;\nmod inner {\n    use super::super::a::A;\n}\n",
        "src/index/mod.rs": "",
    }
    expect("super cycle", _kinds(files), [("cycle", "src/sketch/a.rs", 1)])
    t = Tree(_tree(files))
    t.load_crate(Crate("crate", "src/lib.rs", True))
    a = t.file_modules["src/sketch/a.rs"]
    expect("alias", resolve(a, ["bee", "g"]).file, "src/sketch/b.rs")
    inner = t.file_modules["src/sketch/b.rs"].children["inner"]
    expect("super super", resolve(inner, ["super", "super", "a", "A"]).file, "src/sketch/a.rs")

    # A face re-export is transparent: importing through mod.rs reaches the defining file;
    # a three-file cycle is found as one component.
    files = {
        "src/lib.rs": "mod index;\n",
        "src/index/mod.rs": "mod lsh;\npub(crate) use lsh::{merge::Merge, write::Write};\n",
        "src/index/lsh/mod.rs": "pub(crate) mod merge;\npub(crate) mod write;\npub(crate) mod read;\n",
        "src/index/lsh/merge.rs": "use crate::index::Write;\npub(crate) struct Merge;\n",
        "src/index/lsh/write.rs": "use super::read::R;\npub(crate) struct Write;\n",
        "src/index/lsh/read.rs": "use crate::index::lsh::merge::*;\npub(crate) struct R;\nfn f() -> Merge { todo!() }\n",
    }
    found = _kinds(files)
    expect("3-cycle", found, [("cycle", "src/index/lsh/merge.rs", 1)])
    fs, _ = check(_tree(files))
    expect("3-cycle members", "3 files" in fs[0].msg, True)

    # Test-only code is exempt from layers unless --strict-tests; #[path] modules resolve.
    files = {
        "src/lib.rs": lib,
        "src/sketch/mod.rs": "#[cfg(test)]\n#[path = \"sk_tests.rs\"]\nmod tests;\n",
        "src/sketch/sk_tests.rs": "use crate::Database;\n",
        "src/db/mod.rs": "pub struct Database;\n",
        "src/index/mod.rs": "#[cfg(test)]\nfn fixture() -> crate::Database { todo!() }\n#[test]\nfn t() { use crate::db::Database; }\n",
    }
    expect("tests exempt", _kinds(files), [])
    expect(
        "tests strict",
        _kinds(files, strict=True),
        [("layer", "src/index/mod.rs", 2), ("layer", "src/index/mod.rs", 4), ("layer", "src/sketch/sk_tests.rs", 1)],
    )

    # redb outside storage (code and comments; lib.rs comments allowed); unsafe outside simd,
    # not counted in comments, strings or #[allow(unsafe_code)].
    files = {
        "src/lib.rs": "//! Stored in redb.\nmod simd;\nmod storage;\nmod index;\n",
        "src/simd/mod.rs": "pub(crate) fn f() { unsafe { g() } }\n",
        "src/storage/mod.rs": "use redb::Database;\n",
        "src/index/mod.rs": (
            "// kept in a redb table\n#[allow(unsafe_code)]\nfn g() {\n    let s = \"unsafe\";\n"
            "    let c = '\"'; let l: &'static str = \"x\";\n    unsafe { h() }\n    redb::foo();\n}\n"
        ),
    }
    expect("redb/unsafe", _kinds(files), [("redb", "src/index/mod.rs", 1), ("redb", "src/index/mod.rs", 7), ("unsafe", "src/index/mod.rs", 6)])

    # Binaries: their own crate tree; a #[path] into the library is reported; bin cycles count.
    files = {
        "src/lib.rs": "mod index;\n",
        "src/index/mod.rs": "",
        "src/bin/tool/main.rs": "mod bench;\nmod bench_lsh;\n#[path = \"../../index/mod.rs\"]\nmod sneaky;\nuse sketchdb::Database;\n",
        "src/bin/tool/bench.rs": "use crate::bench_lsh::run;\npub(crate) fn main() {}\n",
        "src/bin/tool/bench_lsh.rs": "pub(crate) fn run() { super::bench::main() }\n",
    }
    expect("bin", _kinds(files), [("cycle", "src/bin/tool/bench.rs", 1), ("layer", "src/bin/tool/main.rs", 4)])

    # An unlisted top-level module is reported; pub(in crate::x) is not a path.
    files = {
        "src/lib.rs": "mod index;\nmod extra;\n",
        "src/index/mod.rs": "pub(in crate::index) struct X;\n",
        "src/extra.rs": "",
    }
    expect("unlisted", _kinds(files), [("layer", "src/extra.rs", 1)])

    print(f"self-test: {cases} cases passed")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help="repository root")
    ap.add_argument("--strict-tests", action="store_true", help="check test-only code for layers and cycles too")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    ap.add_argument("--graph", action="store_true", help="print the file import graph and stop")
    ap.add_argument("--self-test", action="store_true", help="run the resolver's self-tests")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    base = Path(args.root)
    if not (base / "src").is_dir():
        print(f"check_layout: no src/ under {base}", file=sys.stderr)
        return 2
    findings, stats = check(base, args.strict_tests)
    if args.graph:
        for a, bs in stats["graph"].items():
            print(f"{a} -> {' '.join(bs)}")
        return 0
    report(findings, stats, args.quiet)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
