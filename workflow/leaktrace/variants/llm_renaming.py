"""SrDetection's variants as the paper makes them: an LLM renames the
identifiers (Table 7's prompt, verbatim, in
``resources/prompts/srdetection_renaming.txt``), and each of the versions
its answer holds is kept only if it is a pure renaming of the original.

Pure renaming is checked on the token stream: the same tokens in the same
order with the same text between them (formatting, blank lines), where a
name may change only if it changes the same way everywhere, two names never
become one, and neither keywords, attributes (the name after a dot),
builtins, imported names, names the test uses nor names the program
reaches by string (`renaming.dynamic_names`) change; a string or
comment is the original with the same renames applied to some of its
whole words, or none (the prompt asks identifiers in comments to follow).
The sandbox then decides whether the survivors behave as the original
(`validate.validate_variants`). Whatever an answer holds, every version and
every answer ends as a counted outcome with its cause, never an exception.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import keyword
import re
import token
import tokenize
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from leaktrace.models.backend import Completion, Sampling
from leaktrace.variants.renaming import Variant, dynamic_names

PROMPT_PATH = Path(__file__).resolve().parents[3] / "resources" / "prompts" / "srdetection_renaming.txt"
PLACEHOLDER = "{{python_code_snippet}}"
VERSIONS_ASKED = 10  # the prompt's own number, verbatim
# Where the versions are: a JSON array, <code> elements, fenced blocks, or one quoted string per line.
_CODE_ELEMENT = re.compile(r"<code>(.*?)</code>", re.DOTALL)
_FENCE = re.compile(r"```[\w+-]*\n(.*?)```", re.DOTALL)
_QUOTED_LINE = re.compile(r'^[^"\n]*?("(?:[^"\\\n]|\\.)*")[^"\n]*$', re.MULTILINE)
_ESCAPE = re.compile(r"\\([nt\"'\\])")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\"}
_WORDS = re.compile(r"(\w+)")  # split: odd items are the words
_BUILTINS = frozenset(dir(builtins))
_TRIVIA = frozenset({token.NL, token.NEWLINE, token.INDENT, token.DEDENT, token.ENDMARKER})


def renaming_prompt(code: str) -> str:
    return PROMPT_PATH.read_text(encoding="utf-8").rstrip("\n").replace(PLACEHOLDER, code)


def parse_versions(answer: str) -> list[str]:
    """The code versions an answer holds, in order, with ``\\n`` escapes decoded."""
    start, end = answer.find("["), answer.rfind("]")
    if 0 <= start < end:
        try:
            array = json.loads(answer[start : end + 1])
        except ValueError:
            array = None
        if isinstance(array, list) and array and all(isinstance(item, str) for item in array):
            return [_unescape(item) for item in array]
    for pattern in (_CODE_ELEMENT, _FENCE):
        found = [m.group(1) for m in pattern.finditer(answer) if m.group(1).strip()]
        if found:
            return [_unescape(item.strip('"').strip("'")) for item in found]
    versions = []
    for match in _QUOTED_LINE.finditer(answer):
        try:
            versions.append(json.loads(match.group(1)))
        except ValueError:
            continue
    return versions


def _unescape(text: str) -> str:
    """A version written on one line with ``\\n`` for newlines, decoded; text with real newlines as it is."""
    if "\n" in text.strip("\n") or "\\n" not in text:
        return text
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], text)


def check_renaming(
    original: str, candidate: str, reserved: Collection[str] = ()
) -> tuple[dict[str, str] | None, str | None]:
    """(renames, None) if `candidate` is `original` with names changed and
    nothing else, else (None, why not)."""
    if candidate.rstrip("\n") == original.rstrip("\n"):
        return None, "unchanged"
    try:
        old, new = _tokens(original), _tokens(candidate)
    except (tokenize.TokenError, IndentationError, SyntaxError) as error:
        return None, f"not python: {error}"
    if len(old) != len(new):
        return None, f"token count: {len(new)}, the original {len(old)}"
    mapping: dict[str, str] = {}  # every name, to itself where it stays
    for (a, gap_a, after_dot), (b, gap_b, _) in zip(old, new, strict=True):
        if gap_a != gap_b:
            return None, f"formatting: line {a.start[0]}"
        if a.type != b.type:
            return None, f"token: line {a.start[0]}: {b.string!r} for {a.string!r}"
        if a.type != token.NAME:
            continue
        if a.string != b.string:
            if keyword.iskeyword(a.string) or keyword.iskeyword(b.string) or not b.string.isidentifier():
                return None, f"keyword: line {a.start[0]}: {b.string!r} for {a.string!r}"
            if after_dot or a.string in _BUILTINS or a.string in reserved:
                return None, f"fixed name: line {a.start[0]}: {b.string!r} for {a.string!r}"
        if mapping.setdefault(a.string, b.string) != b.string:
            return None, f"inconsistent: {a.string!r} became {mapping[a.string]!r} and {b.string!r}"
    renames = {old_name: new_name for old_name, new_name in mapping.items() if old_name != new_name}
    if not renames:
        return None, "unchanged"
    if len(set(mapping.values())) < len(mapping):
        return None, "collision: two names became one"
    imported = _imported(original)
    if imported & set(renames):
        return None, f"fixed name: imported {sorted(imported & set(renames))}"
    reached_by_string = dynamic_names(original) & set(renames)
    if reached_by_string:
        return None, f"dynamic name: {sorted(reached_by_string)} reached by string"
    for (a, _, _), (b, _, _) in zip(old, new, strict=True):
        if a.type in (token.STRING, token.COMMENT) and not _renamed_text(a.string, b.string, renames):
            return None, f"text changed: line {a.start[0]}"
        if a.type not in (token.NAME, token.STRING, token.COMMENT) and a.string != b.string:
            return None, f"token: line {a.start[0]}: {b.string!r} for {a.string!r}"
    return renames, None


def _tokens(code: str) -> list[tuple[tokenize.TokenInfo, str, bool]]:
    """(token, the text between it and the previous one, whether it follows a dot) for every token."""
    lines = io.StringIO(code).readlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    result, previous_end, previous = [], 0, None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type in _TRIVIA:
            continue
        start = offsets[tok.start[0] - 1] + tok.start[1]
        result.append((tok, code[previous_end:start], previous is not None and previous.string == "."))
        previous_end, previous = offsets[tok.end[0] - 1] + tok.end[1], tok
    return result


def _imported(code: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _renamed_text(old: str, new: str, renames: dict[str, str]) -> bool:
    """Whether `new` is `old` with some of its whole words replaced by their renames."""
    old_parts, new_parts = _WORDS.split(old), _WORDS.split(new)
    return len(old_parts) == len(new_parts) and all(
        b == a or (i % 2 == 1 and renames.get(a) == b)
        for i, (a, b) in enumerate(zip(old_parts, new_parts, strict=True))
    )


@dataclass(frozen=True)
class LLMRenamings:
    """The distinct pure renamings one answer gave, in the answer's order,
    and the outcome of the answer and of each version."""

    variants: list[Variant]
    outcomes: Counter


def renamings_from_answer(
    completion: Completion, code: str, entry_point: str, *, reserved: Collection[str] = ()
) -> LLMRenamings:
    outcomes: Counter = Counter()
    if not completion.ok:
        outcomes[f"answer {completion.outcome}"] += 1
        return LLMRenamings([], outcomes)
    versions = parse_versions(completion.text or "")
    outcomes["answer ok" if len(versions) == VERSIONS_ASKED else f"answer with {len(versions)} versions"] += 1
    variants, seen = [], {code.rstrip("\n")}
    for version in versions:
        text = version if version.endswith("\n") or not code.endswith("\n") else version + "\n"
        renames, why = check_renaming(code, text, reserved)
        if renames is None:
            outcomes[f"version {why.split(':')[0]}"] += 1
        elif text.rstrip("\n") in seen:
            outcomes["version duplicate"] += 1
        else:
            seen.add(text.rstrip("\n"))
            outcomes["version pure renaming"] += 1
            variants.append(Variant(text=text, entry_point=renames.get(entry_point, entry_point), renames=renames))
    return LLMRenamings(variants, outcomes)


def ask_for_renamings(model, codes: Sequence[str], sampling: Sampling) -> list[Completion]:
    """One chat call per program, Table 7's prompt as the user turn."""
    return model.chat_many([[{"role": "user", "content": renaming_prompt(code)}] for code in codes], sampling)
