"""Cut a model's continuation of a function signature down to that function.

The functional-memorization paper prompts with a signature, decodes greedily
for at most 500 tokens and then "parse[s] a valid function from the generated
output" (Sec. 3, *Function completion generation*). Generations run on past
the function (the next ``def``, example usage, prose), stop mid-line at the
token limit, or break off inside a statement, so the function is recovered in
two steps: cut at the first line that leaves the function's block, then drop
trailing lines until the signature plus body parses.
"""

import ast
import io
import itertools
import re
import textwrap
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace

_BRACKET_DEPTH = {
    tokenize.LPAR: 1,
    tokenize.LSQB: 1,
    tokenize.LBRACE: 1,
    tokenize.RPAR: -1,
    tokenize.RSQB: -1,
    tokenize.RBRACE: -1,
}


@dataclass(frozen=True)
class ParsedFunction:
    """The function body recovered from a generation.

    ``body`` is a prefix of the continuation; when ``parsed`` is True,
    ``ast.parse(textwrap.dedent(signature + body))`` succeeds.
    """

    body: str
    parsed: bool


@dataclass(frozen=True)
class _LineStart:
    offset: int  # character offset of the line in the source
    indent: int  # leading whitespace characters
    complete: bool  # the line ends with a newline


def _physical_lines(text: str) -> list[str]:
    """Split on "\\n" only, like the tokenizer; str.splitlines also splits on \\f, \\u2028, ..."""
    return io.StringIO(text).readlines()


def _line_starts(source: str) -> Iterator[_LineStart]:
    """Yield the lines of ``source`` that begin a new statement or comment.

    Only such lines can close a block: a line inside a multi-line string, an
    open bracket or after a backslash continuation may sit at column 0 and
    still belong to the function. The tokenizer tells them apart. Where it
    rejects a line (an inconsistent dedent, a stray character) that line is
    yielded and the scan stops, since no parseable function extends past it;
    an unterminated string or bracket at the end means no further line starts.
    """
    lines = _physical_lines(source)
    offsets = list(itertools.accumulate(map(len, lines), initial=0))

    def line_start(row: int) -> _LineStart:
        text = lines[row - 1]
        return _LineStart(offsets[row - 1], len(text) - len(text.lstrip()), text.endswith("\n"))

    depth, at_line_start = 0, True
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                at_line_start = depth == 0
                continue
            if at_line_start:
                yield line_start(token.start[0])
            at_line_start = False
            depth = max(0, depth + _BRACKET_DEPTH.get(token.exact_type, 0))
    except SyntaxError as error:  # includes IndentationError
        if error.lineno is not None and error.lineno <= len(lines):
            yield line_start(error.lineno)
    except tokenize.TokenError:
        return


def _parses(source: str) -> bool:
    """Whether the dedented source parses, ignoring the compiler's warnings.

    Generated code has things like invalid escape sequences (a Deprecation- or
    SyntaxWarning depending on the Python version); only whether it parses
    matters here, and a warnings filter set to "error" must not change that.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(textwrap.dedent(source))
        except (SyntaxError, ValueError):  # ValueError: null bytes on Python 3.11
            return False
    return True


def _block_lines(signature: str, continuation: str) -> Iterator[tuple[_LineStart, bool]]:
    """Yield the line starts in ``continuation`` and whether each is inside the def's block.

    A line is inside when it is indented further than the first line of the
    signature (the first decorator or the ``def``); offsets are relative to
    ``continuation``.
    """
    starts = _line_starts(signature + continuation)
    header = next(starts, None)
    if header is None:
        return
    for line in starts:
        if line.offset >= len(signature):
            yield replace(line, offset=line.offset - len(signature)), line.indent > header.indent


def parse_generated_function(signature: str, continuation: str) -> ParsedFunction:
    """Recover the function body that ``continuation`` generates after ``signature``.

    ``signature`` is the ``def ...:`` header (with any decorators, possibly
    indented as a method). The continuation is cut where the function's block
    ends, trailing blank lines are dropped, and then trailing lines are dropped
    until ``signature + body`` parses. If no non-empty prefix parses, the cut
    text is returned with ``parsed=False``. That includes an indented method
    whose body has a column-0 line inside a string: ``textwrap.dedent`` finds
    no common indentation to remove, so the method cannot parse on its own.
    """
    end = next(
        (line.offset for line, inside in _block_lines(signature, continuation) if not inside),
        len(continuation),
    )
    lines = _physical_lines(continuation[:end])
    while lines and not lines[-1].strip():
        lines.pop()
    for keep in range(len(lines), 0, -1):
        body = "".join(lines[:keep])
        if _parses(signature + body):
            return ParsedFunction(body, parsed=True)
    return ParsedFunction("".join(lines), parsed=False)


def _may_close_block(signature: str, continuation: str) -> bool:
    """Cheap necessary condition for ``function_end_reached``, without the tokenizer.

    Some complete line of the continuation must start at or left of the
    signature's first line. It does not know about strings and brackets, so
    it may say yes where the tokenizer says no, never the reverse. It keeps the per-step
    stopping check to a regex search while the body is being generated.
    """
    header = next((line for line in _physical_lines(signature) if line.strip()), "")
    indent = len(header) - len(header.lstrip())
    complete = continuation[: continuation.rfind("\n") + 1]
    return re.search(rf"^\s{{0,{indent}}}\S", complete, re.MULTILINE) is not None


def function_end_reached(signature: str, continuation: str) -> bool:
    """Whether generation can stop: the function's block has been closed.

    True once a complete (newline-terminated) line at or left of the ``def``'s
    indentation follows at least one body line. Lines inside multi-line
    strings or brackets do not count, so a docstring with a column-0 line does
    not stop generation early.
    """
    if not _may_close_block(signature, continuation):
        return False
    seen_body = False
    for line, inside in _block_lines(signature, continuation):
        if inside:
            seen_body = True
        elif seen_body:
            return line.complete
    return False
