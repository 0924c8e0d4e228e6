"""Type-1, Type-2 and Type-3 clones of Java, C and C++ code, for the
verifier's development set (:mod:`leaktrace.leakage.devset`).

CodeSnitch's mutations (the rest of :mod:`leaktrace.mutate`) rewrite Python
through its syntax tree; these work on the scan's own tokens
(:data:`leaktrace.languages.C_LIKE`), so they take any function cut out
of a file, and each kind changes only what its clone type allows:

- ``T1``: comments dropped (each with probability one half) and one or two
  generic line comments added, then the layout redrawn by clang-format with a
  drawn style (:func:`leaktrace.mutate.formatting.clang_style`); the tokens
  without comments stay the same.
- ``T2a`` / ``T2b``: every renamable identifier renamed consistently, to
  synonyms of its words (``T2a``, skipped where no word has one) or to 8
  random lower-case letters (``T2b``). Renamable: declared in the code (a name
  after a type, ``*``, ``&``, ``>`` or ``]`` and before ``=``, ``;``, ``,``,
  ``)``, ``[`` or ``:``), starting with a lower-case letter or ``_`` (so no
  class, type or macro), never a keyword, a standard-library name
  (:data:`LIBRARY`), a name that is called or qualified (``x(``, ``x::``),
  a member (after ``.``, ``->``, ``::``) or on a preprocessor line. The
  function's own name is called, so it stays.
- ``T3-<target>``: statements inserted (an unused local), deleted (an
  expression statement) or modified (a number changed, ``i++`` written
  ``i += 1``, the operands of a comparison swapped ...), one line at a
  time, until the share of unchanged lines
  (:func:`leaktrace.mutate.statements.line_similarity`) falls to the target
  or the edit budget is spent (a fifth of the lines inserted, a fifth of the
  statements deleted: short functions stop above the target, and the
  achieved similarity is returned); not behaviour-preserving
  (BigCloneBench's Type-3: statements added, removed or modified). Only statements inside code blocks (a ``{`` after
  ``)``, ``else``, ``do``, ``try`` ...) are touched, never the body of an
  unbraced ``if``/``for``/``while``/``else``.
- ``hybrid-<target>``: ``T2a`` then ``T3`` at the target, measured against the
  renamed text.

Every draw comes from the ``rng`` passed in, so a seeded stream gives the same
text on every run.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass

from leaktrace.languages import C_KEYWORDS, C_LIKE
from leaktrace.mutate.formatting import clang_style, reformat_clang
from leaktrace.mutate.statements import line_similarity
from leaktrace.variants.naming import NameProposer

LANGUAGES = ("java", "c", "cpp")
KINDS = ("T1", "T2a", "T2b", "T3", "hybrid")

# Names of the C, C++ and Java standard libraries that appear where a declared
# variable could (an operand after `*`, `&` or `>`), and C++'s namespace.
LIBRARY = frozenset(
    "std errno stdin stdout stderr cout cin cerr clog endl npos size_t ptrdiff_t string vector map set "
    "pair array deque queue stack list wstring".split()
)
_TYPE_BEFORE = ("*", "&", "&&", ">", "]")
_DECLARED_BEFORE = ("=", ";", ",", ")", "[", ":")
_NOT_TYPES = frozenset(
    "return case goto else new throw sizeof delete do in of yield await instanceof import package using namespace "
    "struct union enum class typename template typedef extends implements throws default break continue".split()
)
_CODE_BLOCK_AFTER = (")", "else", "do", "try", "finally", "const", "noexcept", "override", "->", "mutable")
_COMMENTS = (
    "// check the input first",
    "// main loop",
    "// update the running state",
    "// edge case",
    "// TODO: handle overflow",
    "// done",
    "// the result",
    "// helper values",
)
RANDOM_NAME_LENGTH = 8
_MAX_STEPS = 100


@dataclass(frozen=True)
class Tok:
    kind: str  # the lexer's: comment, string, number, name, op
    text: str
    start: int
    end: int
    line: int  # 0-based line of its start


@dataclass(frozen=True)
class CloneMutation:
    text: str
    similarity: float  # unchanged lines / total lines (T3, hybrid: of the statement step)
    changed: bool
    details: dict


def tokens(code: str) -> list[Tok]:
    """The lexer's C-like tokens of ``code`` with their spans and lines, comments included."""
    out, line, last = [], 0, 0
    for m in C_LIKE.finditer(code):
        line += code.count("\n", last, m.start())
        last = m.start()
        out.append(Tok(m.lastgroup, m.group(), m.start(), m.end(), line))
    return out


def _preprocessor_lines(code: str) -> set[int]:
    return {i for i, text in enumerate(code.split("\n")) if text.lstrip().startswith("#")}


# ---------------------------------------------------------------------------
# T2: renaming


def renamable(code: str) -> list[str]:
    """The identifiers of ``code`` a Type-2 mutation renames, in order of first occurrence."""
    toks = [t for t in tokens(code) if t.kind != "comment"]
    pre = _preprocessor_lines(code)
    declared, banned = [], set()
    for i, t in enumerate(toks):
        if t.kind != "name":
            continue
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if (
            t.line in pre
            or (prev is not None and prev.text in (".", "->", "::"))
            or (nxt is not None and nxt.text in ("(", "::"))
        ):
            banned.add(t.text)
            continue
        if prev is None or nxt is None or nxt.text not in _DECLARED_BEFORE:
            continue
        type_before = prev.text in _TYPE_BEFORE or (prev.kind == "name" and prev.text not in _NOT_TYPES)
        if type_before and t.text not in declared:
            declared.append(t.text)
    return [
        n
        for n in declared
        if n not in banned and n not in C_KEYWORDS and n not in LIBRARY and (n[0].islower() or n[0] == "_")
    ]


def rename(code: str, new_name, rng: random.Random) -> tuple[str, dict[str, str]]:
    """``code`` with each renamable identifier replaced, everywhere, by ``new_name(name, rng, taken)``
    (None: keep it); the names it took are never an existing name or keyword."""
    names = renamable(code)
    toks = tokens(code)
    taken = {t.text for t in toks if t.kind == "name"} | C_KEYWORDS | LIBRARY
    renames: dict[str, str] = {}
    for name in names:
        new = new_name(name, rng, taken)
        if new is not None and new != name:
            renames[name] = new
            taken.add(new)
    out, pos = [], 0
    for t in toks:
        if t.kind == "name" and t.text in renames:
            out += [code[pos : t.start], renames[t.text]]
            pos = t.end
    return "".join(out) + code[pos:], renames


def random_name(name: str, rng: random.Random, taken: set[str]) -> str:
    while True:
        new = "".join(rng.choices(string.ascii_lowercase, k=RANDOM_NAME_LENGTH))
        if new not in taken:
            return new


def synonym_name(names: NameProposer):
    """A ``new_name`` drawing synonyms of the name's words (None where it has none)."""

    def draw(name: str, rng: random.Random, taken: set[str]) -> str | None:
        if not names.can_rename(name):
            return None
        for _ in range(8):
            new = names.draw(name, rng)
            if new != name and new not in taken and new.isidentifier():
                return new
        return None

    return draw


# ---------------------------------------------------------------------------
# Code blocks and statement lines


def _code_lines(code: str) -> tuple[list[int], list[bool]]:
    """(for each line: the paren depth at its start; whether its start lies in a code block)."""
    toks = [t for t in tokens(code) if t.kind != "comment"]
    n_lines = code.count("\n") + 1
    depth_at, in_code = [0] * n_lines, [False] * n_lines
    stack: list[bool] = []
    depth, line, prev = 0, 0, None
    for t in toks:
        while line < t.line:
            line += 1
            depth_at[line], in_code[line] = depth, bool(stack) and stack[-1]
        if t.text == "{":
            stack.append(prev is not None and prev.text in _CODE_BLOCK_AFTER)
        elif t.text == "}" and stack:
            stack.pop()
        elif t.text in "([":
            depth += 1
        elif t.text in ")]":
            depth -= 1
        prev = t
    while line < n_lines - 1:
        line += 1
        depth_at[line], in_code[line] = depth, bool(stack) and stack[-1]
    return depth_at, in_code


def _line_tokens(line: str) -> list[Tok]:
    return [t for t in tokens(line) if t.kind != "comment"]


def statement_lines(code: str) -> list[int]:
    """Lines holding one whole simple statement inside a code block, not the body of an unbraced
    ``if``/``for``/``while``/``else``: those a Type-3 edit may delete or change."""
    lines = code.split("\n")
    depth_at, in_code = _code_lines(code)
    out, previous = [], None
    for i, text in enumerate(lines):
        toks = _line_tokens(text)
        if not toks:
            continue
        last = toks[-1].text
        starts_fresh = previous in (None, ";", "{", "}", ":")
        whole = depth_at[i] == 0 and (i + 1 == len(lines) or depth_at[i + 1] == 0)
        if (
            in_code[i]
            and starts_fresh
            and whole
            and last == ";"
            and toks[0].text not in ("for", "}", "else")
            and not text.lstrip().startswith("#")
        ):
            out.append(i)
        previous = last
    return out


# ---------------------------------------------------------------------------
# T3: statement edits


def _is_expression_statement(toks: list[Tok]) -> bool:
    """``x = ...;``, ``x++;``, ``++x;``, ``a[i] = ...;``, ``obj.call(...);``: no declaration, no jump."""
    if toks[0].text in ("++", "--"):
        return True
    if toks[0].kind != "name" or toks[0].text in C_KEYWORDS or len(toks) < 3:
        return False
    return toks[1].text in (
        "=",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "<<=",
        ">>=",
        "++",
        "--",
        "[",
        ".",
        "->",
        "(",
    )


def _operand(t: Tok) -> bool:
    """A number or a lower-case name that is no keyword: not a type (``Map<Integer, ...>``, ``pair<int, int>``)."""
    return t.kind == "number" or (
        t.kind == "name" and t.text not in C_KEYWORDS and (t.text[0].islower() or t.text[0] == "_")
    )


_FLIP = {"==": "==", "!=": "!=", "+": "+", "*": "*", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_COMPOUND = ("+=", "-=", "*=", "/=", "%=")


def _modifications(text: str) -> list[str]:
    """The one-token-group changes a Type-3 edit may make to line ``text``: a number plus one,
    ``i++`` written ``i += 1``, ``x += e;`` written ``x = x + (e);``, the simple operands of a
    comparison, ``+`` or ``*`` swapped (``a < b`` as ``b > a``)."""
    toks = _line_tokens(text)
    out = []
    for i, t in enumerate(toks):
        before = toks[i - 1] if i else None
        after = toks[i + 1] if i + 1 < len(toks) else None
        if t.kind == "number" and re.fullmatch(r"\d+", t.text):
            out.append(text[: t.start] + str(int(t.text) + 1) + text[t.end :])
        if (
            t.text in ("++", "--")
            and before is not None
            and before.kind == "name"
            and after is not None
            and after.text in (";", ")")
        ):
            out.append(text[: before.start] + f"{before.text} {t.text[0]}= 1" + text[t.end :])
        if t.text in _COMPOUND and i == 1 and before.kind == "name" and toks[-1].text == ";":
            rhs = text[after.start : toks[-1].start].strip()
            out.append(text[: t.start] + f"= {before.text} {t.text[0]} ({rhs});" + text[toks[-1].end :])
        if t.text in _FLIP and before is not None and after is not None and _operand(before) and _operand(after):
            outer_left = toks[i - 2].text if i > 1 else None
            outer_right = toks[i + 2].text if i + 2 < len(toks) else None
            if outer_left in (None, "(", "=", ",", "return", "&&", "||") and outer_right in (
                None,
                ")",
                ";",
                ",",
                "&&",
                "||",
            ):
                out.append(
                    text[: before.start]
                    + after.text
                    + text[before.end : t.start]
                    + _FLIP[t.text]
                    + text[t.end : after.start]
                    + before.text
                    + text[after.end :]
                )
    return [m for m in out if m != text]


def _fresh_name(code: str) -> str:
    taken = {t.text for t in tokens(code) if t.kind == "name"}
    return next(
        n for n in (*("unused", "spare", "scratch", "marker"), *(f"tmp{k}" for k in range(100))) if n not in taken
    )


def _insertion(name: str, rng: random.Random) -> str:
    """An unused local declaration of ``name`` (one the code does not use)."""
    kind = rng.choice(("int", "long", "double"))
    return f"{kind} {name} = {rng.randint(0, 9)}{'.5' if kind == 'double' else ''};"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _edits(code: str, rng: random.Random) -> dict[str, list[str]]:
    """Every single-line Type-3 edit of ``code``, as texts, by kind: ``insert`` (an unused local),
    ``delete`` (an expression statement), ``modify`` (:func:`_modifications` of a line in a code block)."""
    lines = code.split("\n")
    stmts = statement_lines(code)
    _, in_code = _code_lines(code)
    out: dict[str, list[str]] = {"insert": [], "delete": [], "modify": []}
    for i in stmts:
        if _is_expression_statement(_line_tokens(lines[i])):
            out["delete"].append("\n".join(lines[:i] + lines[i + 1 :]))
    for i, line in enumerate(lines):
        if in_code[i] and not line.lstrip().startswith("#"):
            out["modify"] += ["\n".join(lines[:i] + [changed] + lines[i + 1 :]) for changed in _modifications(line)]
    # not after a jump (Java rejects unreachable code), nor before `else` (it would lose its `if`) or
    # a case label (a declaration may not be jumped over)
    anchors = [
        i
        for i in stmts
        if i + 1 < len(lines)
        and not re.match(r"\s*(else|case|default)\b", lines[i + 1])
        and not re.match(r"\s*(return|break|continue|throw)\b", lines[i])
    ]
    anchors += [
        i
        for i, text in enumerate(lines)
        if text.rstrip().endswith("{")
        and i + 1 < len(lines)
        and in_code[i + 1]
        and not text.lstrip().startswith("switch")
    ]
    fresh = _fresh_name(code)
    for i in sorted(set(anchors)):
        below = lines[i + 1] if lines[i + 1].strip() and not lines[i + 1].lstrip().startswith("}") else None
        indent = (
            _indent(below)
            if below is not None
            else _indent(lines[i]) + ("    " if lines[i].rstrip().endswith("{") else "")
        )
        out["insert"].append("\n".join(lines[: i + 1] + [indent + _insertion(fresh, rng)] + lines[i + 1 :]))
    return out


def rewrite_statements(code: str, target: float, rng: random.Random) -> CloneMutation:
    """Single-line edits (:func:`_edits`), the kind drawn first, then the edit, until the line
    similarity to ``code`` reaches ``target`` or no edit is left. A deletion or a modification
    must lower the similarity (so it touches a line not yet changed); an insertion may keep it
    (after a deletion the lengths are equal again). At most a fifth of the code lines are
    inserted and a fifth of the simple statements deleted (at least one each), so the copy
    keeps most of what the code does."""
    text, similarity = code, 1.0
    budget = {
        "insert": max(1, sum(bool(line.strip()) for line in code.split("\n")) // 5),
        "delete": max(1, len(statement_lines(code)) // 5),
    }
    made: dict[str, int] = {"insert": 0, "delete": 0, "modify": 0}
    for _ in range(_MAX_STEPS):
        if similarity <= target:
            break
        edits = {
            kind: [
                e
                for e in found
                if line_similarity(code, e) < similarity
                or (kind == "insert" and line_similarity(code, e) == similarity)
            ]
            for kind, found in _edits(text, rng).items()
            if kind == "modify" or made[kind] < budget[kind]
        }
        kinds = [kind for kind, found in edits.items() if found]
        if not kinds:
            break
        kind = rng.choice(kinds)
        text = rng.choice(edits[kind])
        made[kind] += 1
        similarity = line_similarity(code, text)
    return CloneMutation(text, similarity, text != code, {"edits": made})


# ---------------------------------------------------------------------------
# T1: comments and layout


def _drop_comment(code: str, t: Tok) -> str:
    """``code`` without comment ``t``, and without its line when nothing else is on it."""
    start = code.rfind("\n", 0, t.start) + 1
    end = code.find("\n", t.end)
    rest = code[t.end : end if end >= 0 else len(code)]
    if code[start : t.start].strip() or rest.strip():
        return code[: t.start] + code[t.end :]
    return code[:start] + code[end + 1 :] if end >= 0 else code[:start]


def strip_comments(code: str) -> str:
    """``code`` without its comments (a line left empty by one goes too)."""
    for t in reversed([t for t in tokens(code) if t.kind == "comment"]):
        code = _drop_comment(code, t)
    return code


def reformat(code: str, language: str, rng: random.Random) -> str:
    """Comments dropped or added, then clang-format with a drawn style (redrawn while nothing changed)."""
    for t in reversed([t for t in tokens(code) if t.kind == "comment"]):
        if rng.random() < 0.5:
            code = _drop_comment(code, t)
    lines = code.split("\n")
    for _ in range(rng.randint(1, 2)):
        stmts = statement_lines("\n".join(lines))
        if stmts:
            i = rng.choice(stmts)
            lines.insert(i, _indent(lines[i]) + rng.choice(_COMMENTS))
    code = "\n".join(lines)
    text = code
    for _ in range(8):
        text = reformat_clang(code, language, clang_style(rng))
        if text != code:
            break
    return text


# ---------------------------------------------------------------------------


def mutate(name: str, code: str, language: str, rng: random.Random, names: NameProposer | None = None) -> CloneMutation:
    """``code`` (Java, C or C++) mutated by ``name``: ``T1``, ``T2a``, ``T2b``, ``T3-<target>`` or
    ``hybrid-<target>``. ``T2a`` and ``hybrid`` need ``names``."""
    if language not in LANGUAGES:
        raise ValueError(f"C-family mutations take {', '.join(LANGUAGES)}, not {language!r}")
    kind, _, target = name.partition("-")
    if kind not in KINDS or bool(target) != (kind in ("T3", "hybrid")):
        raise ValueError(f"unknown C-family mutation {name!r}")
    if kind in ("T2a", "hybrid") and names is None:
        raise ValueError(f"{kind} needs a name proposer (synonyms)")
    if kind == "T1":
        text = reformat(code, language, rng)
        return CloneMutation(text, line_similarity(code, text), text != code, {})
    if kind in ("T2a", "T2b"):
        text, renames = rename(code, synonym_name(names) if kind == "T2a" else random_name, rng)
        return CloneMutation(text, line_similarity(code, text), bool(renames), {"renames": renames})
    if kind == "T3":
        return rewrite_statements(code, float(target), rng)
    renamed, renames = rename(code, synonym_name(names), rng)
    result = rewrite_statements(renamed, float(target), rng)
    return CloneMutation(result.text, result.similarity, result.text != code, {**result.details, "renames": renames})
