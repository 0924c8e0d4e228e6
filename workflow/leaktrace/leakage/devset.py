"""A labelled development set for the verifier, built offline and
deterministically from the shipped HumanEval and the standard library the
pipeline reads as its code corpus; every pair is labelled by construction
with LessLeak's binary label (duplicate or not), its clone type and its
language.

Duplicates (the corpus side is the benchmark side changed as follows):

- ``T1``, ``T2a``, ``T2b``, ``T3-0.7``, ``T3-0.5``, ``hybrid-0.8``: the
  behaviour-preserving mutations of :mod:`leaktrace.mutate` (Type-1, Type-2,
  Type-2, Type-3, Type-3, Type-3);
- ``T2b-nodoc``, ``T3-0.7-nodoc``, ``hybrid-0.8-nodoc``: those mutations
  with the docstrings removed (a copy without its problem text; the code
  alone must carry the decision);
- the same mutations (``T1`` to ``hybrid-0.8``) of standard-library
  functions, docstrings removed on both sides (code-only samples, no tests);
- ``alternative``: another correct solution of the same HumanEval problem,
  written by hand (``resources/verify/alternatives.jsonl``, each checked to
  pass the problem's tests), without the problem text (Type-4);
- ``statement+alternative``: the problem's prompt (signature and docstring)
  over that other solution (Type-4);
- ``few-lines``: a standard-library file with a few lines deleted,
  duplicated or edited (near-identical files, Type-3);
- ``text-reflow`` and ``text-edit``: a problem statement (language ``text``)
  re-wrapped inside Markdown, or with about one word in ten dropped or
  replaced (Type-1, Type-3).

Not duplicates (clone type ``none``): each benchmark sample against its
nearest other HumanEval problem (``nearest-humaneval``; HumanEval/56 and /61
are one template), its nearest standard-library function
(``nearest-stdlib``; for a standard-library function, its nearest other one), a file against its nearest other file
(``nearest-file``), a statement against its nearest other statement
(``nearest-text``); nearest by code-token 3-gram Jaccard.

``half`` splits by group (a problem, a function or a file, with every pair
made from it): ``dev`` (thresholds are chosen there) or ``held-out``.
Deterministic for a given interpreter (its standard library is the corpus).

:func:`build_cfamily` is the Java, C and C++ part, from the small programs
written for it under ``resources/verify/{java,c,cpp}/`` (one file per task,
``<task>.<ext>`` with a doc comment stating the problem, and
``<task>.alt<k>.<ext>`` other implementations of it, without one; all
compile). Duplicates: the :mod:`leaktrace.mutate.cfamily` mutations ``T1``
to ``hybrid-0.8`` of each task (``T2b``, ``T3-0.7``, ``hybrid-0.8`` also
with comments removed, ``-nodoc``), each other implementation alone
(``alternative``) and under the task's doc comment
(``statement+alternative``; Type-4). Not duplicates: the task against its
nearest other task (``nearest-task``), the nearest other task's other
implementation (``nearest-alternative``) and a randomly drawn other task
(``unrelated``), all of its language. No tests: execution equivalence is
Python-only, so no pair of these languages is run.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import textwrap
from collections import Counter
from pathlib import Path

from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage.tokens import code_tokens, shingles
from leaktrace.mutate import cfamily
from leaktrace.mutate.registry import Mutation, apply_mutation
from leaktrace.seeding import rng_for
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.synonyms import WordAlternatives
from leaktrace.variants.validate import reserved_names

ALTERNATIVES = Path(__file__).resolve().parents[3] / "resources" / "verify" / "alternatives.jsonl"
FIXTURES = ALTERNATIVES.parent
CFAMILY = {"java": ".java", "c": ".c", "cpp": ".cpp"}  # language: file extension of its fixtures
MUTATIONS = {
    "T1": "type-1",
    "T2a": "type-2",
    "T2b": "type-2",
    "T3-0.7": "type-3",
    "T3-0.5": "type-3",
    "hybrid-0.8": "type-3",
}
NODOC = ("T2b", "T3-0.7", "hybrid-0.8")
STDLIB_MUTATIONS = ("T1", "T2b", "T3-0.7", "T3-0.5", "hybrid-0.8")
_DOCSTRING = re.compile(r"\n[ \t]*(\"\"\"|\'\'\')[\s\S]*?\1[ \t]*(?=\n)")
STDLIB_EXCLUDE = (
    "test/*",
    "idlelib/*",
    "lib2to3/tests/*",
    "tkinter/test/*",
    "unittest/test/*",
    "ctypes/test/*",
    "distutils/tests/*",
    "sqlite3/test/*",
)  # config.yaml's corpora.stdlib.exclude


def half_of(group: str) -> str:
    return "dev" if hashlib.sha256(group.encode()).digest()[0] % 2 == 0 else "held-out"


def _grams(text: str) -> set[str]:
    return set(shingles(code_tokens(text), 3))


def _nearest(query: set[str], pool: list[set[str]], exclude: int | None) -> int:
    """The index of the pool entry with the highest Jaccard to ``query`` (the first on ties), ``exclude`` left out."""
    best, best_j = -1.0, -1
    for j, other in enumerate(pool):
        if j == exclude:
            continue
        union = len(query | other)
        score = len(query & other) / union if union else 0.0
        if score > best:
            best, best_j = score, j
    return best_j


def _stdlib() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(top-level functions of 6 to 40 lines, files of 30 to 200 lines), each (id, text), in path order."""
    functions, files = [], []
    for doc in iter_stdlib_code(STDLIB_EXCLUDE):
        try:
            tree = ast.parse(doc.text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        lines = doc.text.splitlines(keepends=True)
        if 30 <= len(lines) <= 200:
            files.append((doc.doc_id, doc.text))
        for node in tree.body:
            if (
                isinstance(node, ast.FunctionDef)
                and 6 <= node.end_lineno - node.lineno + 1 <= 40
                and not node.decorator_list
            ):
                functions.append((f"{doc.doc_id}::{node.name}", "".join(lines[node.lineno - 1 : node.end_lineno])))
    return functions, files


def _docstring(code: str, entry_point: str) -> str | None:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return ast.get_docstring(node)
    return None


def strip_docstrings(code: str) -> str:
    """``code`` without its docstrings (triple-quoted strings standing on their own lines)."""
    return _DOCSTRING.sub("", code)


def _edit_lines(text: str, k: int, rng: random.Random) -> str:
    """``text`` with ``k`` of its code lines deleted, duplicated or edited (a name changed, a line appended)."""
    lines = text.splitlines(keepends=True)
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    for i in sorted(rng.sample(code, min(k, len(code))), reverse=True):
        action = rng.choice(("delete", "duplicate", "edit"))
        if action == "delete":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        else:
            names = re.findall(r"[A-Za-z_]\w*", lines[i])
            lines[i] = lines[i].replace(names[-1], names[-1] + "_v2") if names else lines[i]
    return "".join(lines)


def _edit_words(text: str, rng: random.Random) -> str:
    out = []
    for word in text.split():
        r = rng.random()
        if r < 0.05:
            continue
        out.append("the" if r < 0.1 else word)
    return " ".join(out)


def pair(
    group: str, kind: str, clone: str, language: str, bench: str, corpus: str, *, name: str | None = None, **extra
) -> dict:
    """One labelled pair: the ``verify-pairs`` input fields plus ``clone_type``, ``duplicate``, ``kind``,
    ``group`` and ``half`` (its id is ``group|kind``, or ``group|name``)."""
    return {
        "id": f"{group}|{name or kind}",
        "group": group,
        "half": half_of(group),
        "kind": kind,
        "language": language,
        "clone_type": clone,
        "duplicate": clone != "none",
        "bench_text": bench,
        "corpus_text": corpus,
        **extra,
    }


def build(seed: int = 0, n_stdlib: int = 120, n_files: int = 50) -> list[dict]:
    """Every pair of the Python and text set, one dict each (:func:`pair`)."""
    pairs: list[dict] = []

    def add(group: str, kind: str, clone: str, language: str, bench: str, corpus: str, **extra) -> None:
        pairs.append(pair(group, kind, clone, language, bench, corpus, **extra))

    humaneval = load_humaneval(shipped_humaneval_path(), "humaneval")
    names = NameProposer(WordAlternatives(Counter()), Counter())
    functions, files = _stdlib()
    pick = rng_for(seed, "devset", "stdlib")
    chosen = sorted(pick.sample(range(len(functions)), n_stdlib))
    chosen_files = sorted(pick.sample(range(len(files)), n_files))
    he_grams = [_grams(s.code) for s in humaneval]
    pool_grams = [_grams(text) for _, text in functions]
    alternatives = {r["task_id"]: r["code"] for r in map(json.loads, ALTERNATIVES.read_text().splitlines())}

    for i, s in enumerate(humaneval):
        group = s.sample_id
        run = {"tests": s.test, "entry_point": s.entry_point}
        protected = reserved_names(s.test)
        for name, clone in MUTATIONS.items():
            try:
                m = apply_mutation(
                    Mutation.parse(name),
                    s.code,
                    "python",
                    s.entry_point,
                    rng_for(seed, "devset", name, group),
                    names=names,
                    protected=protected,
                )
            except (ValueError, SyntaxError):
                continue
            if m.text != s.code:
                add(group, name, clone, "python", s.code, m.text, **run)
                if name in NODOC:  # the copy without its problem text: the code alone must carry the decision
                    add(group, f"{name}-nodoc", clone, "python", s.code, strip_docstrings(m.text), **run)
        if s.task_id in alternatives:
            alt = alternatives[s.task_id]
            add(group, "alternative", "type-4", "python", s.code, alt, **run)
            body = alt.split("\n", 1)[1]
            add(group, "statement+alternative", "type-4", "python", s.code, s.prompt.rstrip() + "\n" + body, **run)
        j = _nearest(he_grams[i], he_grams, i)
        add(group, "nearest-humaneval", "none", "python", s.code, humaneval[j].code, **run)
        k = _nearest(he_grams[i], pool_grams, None)
        add(group, "nearest-stdlib", "none", "python", s.code, functions[k][1], **run)
        doc = _docstring(s.code, s.entry_point)
        if doc and len(doc.split()) >= 12:
            rng = rng_for(seed, "devset", "text", group)
            wrapped = textwrap.fill(" ".join(doc.split()), width=rng.randint(50, 100))
            add(
                group + "#text",
                "text-reflow",
                "type-1",
                "text",
                doc,
                f"## Exercise {rng.randint(1, 99)}\n\n{wrapped}\n\nTry it yourself before reading on.\n",
            )
            add(group + "#text", "text-edit", "type-3", "text", doc, _edit_words(doc, rng))
    docs = [(p["group"], p["bench_text"]) for p in pairs if p["kind"] == "text-reflow"]
    doc_grams = [_grams(d) for _, d in docs]
    for i, (group, doc) in enumerate(docs):
        add(group, "nearest-text", "none", "text", doc, docs[_nearest(doc_grams[i], doc_grams, i)][1])

    for i in chosen:  # code only: docstrings removed on both sides, no tests
        fid, text = functions[i][0], strip_docstrings(functions[i][1])
        name = fid.rsplit("::", 1)[1]
        for kind in STDLIB_MUTATIONS:
            try:
                m = apply_mutation(
                    Mutation.parse(kind), text, "python", name, rng_for(seed, "devset", kind, fid), names=names
                )
            except (ValueError, SyntaxError):
                continue
            if m.text != text:
                add(fid, kind, MUTATIONS[kind], "python", text, m.text)
        add(
            fid,
            "nearest-stdlib",
            "none",
            "python",
            text,
            strip_docstrings(functions[_nearest(pool_grams[i], pool_grams, i)][1]),
        )
    file_grams = [_grams(t) for _, t in files]
    for i in chosen_files:
        fid, text = files[i]
        rng = rng_for(seed, "devset", "few-lines", fid)
        add(fid, "few-lines", "type-3", "python", text, _edit_lines(text, rng.randint(2, 5), rng))
        add(fid, "nearest-file", "none", "python", text, files[_nearest(file_grams[i], file_grams, i)][1])
    return pairs


def fixtures(language: str, root: Path = FIXTURES) -> list[tuple[str, str, list[str]]]:
    """(task, its code, its other implementations) of ``language``'s fixtures under ``root``, by task name."""
    ext = CFAMILY[language]
    paths = sorted((root / language).glob(f"*{ext}"))
    alts: dict[str, list[str]] = {}
    for path in paths:
        task, dot, rest = path.name[: -len(ext)].partition(".")
        if dot:
            alts.setdefault(task, []).append(path.read_text())
    return [
        (path.name[: -len(ext)], path.read_text(), alts.get(path.name[: -len(ext)], []))
        for path in paths
        if "." not in path.name[: -len(ext)]
    ]


def _comments(code: str) -> str:
    return "\n".join(t.text for t in cfamily.tokens(code) if t.kind == "comment")


def build_cfamily(
    seed: int = 0, languages: tuple[str, ...] = tuple(CFAMILY), root: Path = FIXTURES, names: NameProposer | None = None
) -> list[dict]:
    """Every pair of the Java, C and C++ set (see the module docstring) from the fixtures under
    ``root``, one dict each (:func:`pair`); ``names`` proposes T2a's synonyms (default: the
    curated word table and WordNet, as for Python)."""
    names = names or NameProposer(WordAlternatives(Counter()), Counter())
    pairs: list[dict] = []
    for language in languages:
        tasks = fixtures(language, root)
        grams = [_grams(code) for _, code, _ in tasks]
        others = [(t, alt) for t, _, alts in tasks for alt in alts]
        other_grams = [_grams(alt) for _, alt in others]
        for i, (task, code, alts) in enumerate(tasks):
            group = f"{language}/{task}"

            def add(kind: str, clone: str, corpus: str, name: str | None = None) -> None:
                pairs.append(pair(group, kind, clone, language, code, corpus, name=name))  # noqa: B023 (add is called in this iteration)

            for kind, clone in MUTATIONS.items():
                m = cfamily.mutate(kind, code, language, rng_for(seed, "devset", kind, group), names)
                if m.changed:
                    add(kind, clone, m.text)
                    if kind in NODOC:
                        add(f"{kind}-nodoc", clone, cfamily.strip_comments(m.text))
            for k, alt in enumerate(alts, 1):
                add("alternative", "type-4", alt, f"alternative-{k}")
                add("statement+alternative", "type-4", _comments(code) + "\n" + alt, f"statement+alternative-{k}")
            nearest = _nearest(grams[i], grams, i)
            add("nearest-task", "none", tasks[nearest][1])
            theirs = [j for j, (t, _) in enumerate(others) if t != task]
            if theirs:
                add(
                    "nearest-alternative",
                    "none",
                    others[theirs[_nearest(grams[i], [other_grams[j] for j in theirs], None)]][1],
                )
            rng = rng_for(seed, "devset", "unrelated", group)
            add("unrelated", "none", tasks[rng.choice([j for j in range(len(tasks)) if j not in (i, nearest)])][1])
    return pairs


def write_jsonl(pairs: list[dict], path: Path) -> None:
    path.write_text("".join(json.dumps(p, sort_keys=True) + "\n" for p in pairs), encoding="utf-8")
