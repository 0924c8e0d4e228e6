"""Check that variants behave exactly as their original under the sample's test.

A variant that no longer runs is not the same program under other names, and
comparing a model's perplexity on it with the original's would measure the
breakage, not memorisation. Validation is differential, as SrDetection defines
semantics preservation: the sandbox runs the sample's test against the
original and against each variant, each in its own run, and records every
call the test makes (its arguments, and the exact builtin value returned or
the exception type raised). The original must pass its test; a variant is
valid iff its record equals the original's byte for byte. A ``check``, or
unittest classes, run in the program's own process, as the benchmark's
harness runs them (`leaktrace.sandbox.run_whole_test`, `run_whole_unittest`:
there the record holds each assertion of a unittest class), so an original
whose test calls a function it returned, consumes its iterator or checks the
list it changed in place is not called wrong; the record holds the
arguments after each call that changed them, and a value that is not a
builtin one by its type (None for a class of the program's, which a
renaming renames), what it does being the test's to judge. The comparison
happens here, outside every sandboxed process, and no variant's run ever
sees the original's outputs. The variants are the pipeline's own renamings
and mutations of the benchmark's solution (an LLM's renaming only once
checked pure), not code written to forge a verdict, which a program sharing
its test's process could. Equality is exact, so it is
stricter than the test's `==`: 1 for 1.0, a list for a tuple, or a dict in
another order counts as a difference. The entry point is recorded as
"candidate", so a renamed entry point is no difference. A whole program
run on standard input (APPS) is recorded as one "call" per case, its
output as the value (`leaktrace.sandbox.stdio`): a renamed variant must
write byte for byte what its original wrote on every input.

A variant or mutation that leaves the code unchanged is not valid either: it
passes trivially and measures nothing. :func:`is_unchanged` compares the
normalised texts, and :func:`variant_status` reports such a one as
``unchanged`` (never ``valid``), counted apart from valid and invalid ones.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import token
import tokenize
from collections.abc import Sequence

from leaktrace.data.io_tests import IoTests
from leaktrace.data.samples import UnittestTests
from leaktrace.sandbox import SandboxLimits, SandboxResult, run_whole_tests, run_whole_unittests
from leaktrace.sandbox.stdio import run_io_tests_many
from leaktrace.sandbox.values import decode

_SHOWN_CHARS = 120
STATUSES = ("valid", "invalid", "unchanged", "unvalidated")
# Python tokens that are layout or commentary, not code
_LAYOUT_TOKENS = {token.COMMENT, token.NL, token.ENCODING, token.ENDMARKER}
_CODE_TOKEN = re.compile(r"\w+|[^\w\s]")


def normalised_code(code: str, language: str = "python", *, layout: bool = False) -> tuple[str, ...]:
    """The text two versions of a program are compared by. With ``layout``
    (for a mutation whose change is the layout, T1): the lines with line
    endings unified, trailing whitespace and leading/trailing blank lines
    dropped. Otherwise the code tokens: for Python, ``tokenize``'s tokens
    without comments and blank lines, indentation kept as INDENT/DEDENT/
    NEWLINE markers (so spacing, line breaks inside brackets and comments do
    not count, a statement moved in or out of a block does); for other
    languages, or Python that does not tokenize, runs of word characters and
    single punctuation characters (so only whitespace does not count)."""
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if layout:
        return tuple("\n".join(line.rstrip() for line in lines).strip("\n").split("\n"))
    if language.lower() == "python":
        try:
            return tuple(
                tok.string if tok.type not in (token.NEWLINE, token.INDENT, token.DEDENT) else token.tok_name[tok.type]
                for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines)).readline)
                if tok.type not in _LAYOUT_TOKENS
            )
        except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
            pass
    return tuple(_CODE_TOKEN.findall(code))


def is_unchanged(original: str, text: str | None, language: str = "python", *, layout: bool = False) -> bool:
    """Whether ``text`` is ``original`` under :func:`normalised_code` (a missing text is not unchanged)."""
    return text is not None and normalised_code(original, language, layout=layout) == normalised_code(
        text, language, layout=layout
    )


def variant_status(valid: bool | None, unchanged: bool) -> str:
    """``unchanged`` (whatever the sandbox said), else ``valid``, ``invalid``,
    or ``unvalidated`` (not run: no tests or no toolchain)."""
    return "unchanged" if unchanged else "unvalidated" if valid is None else "valid" if valid else "invalid"


def reserved_names(test: str | IoTests | UnittestTests) -> frozenset[str]:
    """Identifiers in a sample's test code, to pass to `make_variants` as `reserved`.

    The test takes from the program the names it uses (HumanEval/38's test
    calls `encode_cyclic`), so a variant must keep them; and it must not
    introduce a name the test defines (every test defines `check`). A whole
    program on standard input shares no names with its tests: none.
    """
    if isinstance(test, IoTests):
        return frozenset()
    if isinstance(test, UnittestTests):
        test = test.code
    tokens = tokenize.generate_tokens(io.StringIO(test).readline)
    return frozenset(tok.string for tok in tokens if tok.type == token.NAME and not keyword.iskeyword(tok.string))


def validate_variants(
    items: Sequence[tuple[str, str | IoTests | UnittestTests, str | None]],
    originals: Sequence[int],
    limits: SandboxLimits,
    *,
    workers: int,
) -> list[tuple[bool, str | None]]:
    """(valid, reason if not) for each (code, tests, entry point) triple, in order:
    tests HumanEval-style (``check`` code, with the entry point it calls) or
    unittest classes (each assertion recorded, and each test's outcome), both
    run in the program's process, or APPS-style stdin/stdout
    cases of a whole program (entry point None), whose record holds each
    case's output (`leaktrace.sandbox.stdio`).

    `originals[i]` is the index of item i's original; an original points to itself.
    """
    if len(originals) != len(items):
        raise ValueError(f"{len(items)} items but {len(originals)} original indices")
    syntax = [_syntax_error(code) for code, _, _ in items]
    runnable = [i for i, error in enumerate(syntax) if error is None]
    checked = [i for i in runnable if isinstance(items[i][1], str)]
    on_stdin = [i for i in runnable if isinstance(items[i][1], IoTests)]
    unittests = [i for i in runnable if isinstance(items[i][1], UnittestTests)]
    results: list[SandboxResult | None] = [None] * len(items)
    for i, result in zip(checked, run_whole_tests([items[i] for i in checked], limits, workers=workers), strict=True):
        results[i] = result
    ran = (
        run_whole_unittests([(items[i][0], items[i][1].code) for i in unittests], limits, workers=workers)
        if unittests
        else []
    )
    for i, result in zip(unittests, ran, strict=True):
        results[i] = result
    if on_stdin:
        ran = run_io_tests_many([items[i][:2] for i in on_stdin], limits, workers=workers)
        for i, result in zip(on_stdin, ran, strict=True):
            results[i] = result
    own = [syntax[i] or _own_verdict(results[i]) for i in range(len(items))]
    verdicts = []
    for i, original in enumerate(originals):
        if own[original] is not None:
            reason = own[i] if original == i else f"original {own[original]}"
        else:
            reason = own[i] or _difference(results[i].record, results[original].record)
        verdicts.append((reason is None, reason))
    return verdicts


def _syntax_error(code: str) -> str | None:
    try:
        ast.parse(code)
    except SyntaxError as error:
        return f"syntax: line {error.lineno}: {error.msg}"
    except ValueError as error:  # e.g. null bytes
        return f"syntax: {error}"
    return None


def _own_verdict(result: SandboxResult) -> str | None:
    """None if the run passed its test, else why not."""
    return None if result.status == "ok" else f"{result.status}: {result.error}"


def _difference(record: bytes, reference: bytes) -> str | None:
    """None if the records are equal, else the first way the variant's differs from the original's."""
    if record == reference:
        return None
    calls, expected = decode(record)["calls"], decode(reference)["calls"]
    for number, (call, wanted) in enumerate(zip(calls, expected, strict=False), start=1):
        if call != wanted:
            name, args, kwargs, *outcome = decode(call)
            _, wanted_args, wanted_kwargs, *wanted_outcome = decode(wanted)
            if len(outcome) == 1:  # a record of calls across the sandbox's boundary (stdin cases)
                arguments = ", ".join([*map(repr, args), *(f"{key}={value!r}" for key, value in kwargs.items())])
                gave, wanted_gave = outcome[0], wanted_outcome[0]
            else:
                arguments = ", ".join([*map(_form, args), *(f"{key}={_form(value)}" for key, value in kwargs.items())])
                if (args, kwargs) != (wanted_args, wanted_kwargs):
                    return (
                        f"differs: call {number} ({_shown(f'{name}({arguments})')}), the original's had other arguments"
                    )
                changed = outcome[1] is not None or wanted_outcome[1] is not None
                gave, wanted_gave = _outcome(*outcome, changed), _outcome(*wanted_outcome, changed)
            return (
                f"differs: call {number} ({_shown(f'{name}({arguments})')}) gave {_shown(gave)},"
                f" the original {_shown(wanted_gave)}"
            )
    return f"differs: {len(calls)} calls, the original's test made {len(expected)}"


def _form(form: tuple) -> str:
    """A value as a whole test's record holds it (`leaktrace.sandbox.harness._form`), as text."""
    kind, value = form
    if kind == "value":
        return repr(value)
    return f"<{getattr(value, '__name__', None) or getattr(value, 'qualname', None) or 'an object of the program'}>"


def _outcome(outcome: tuple, after: tuple | None, changed: bool) -> str:
    """What a call gave, as text: its return value or exception, and, where
    either run's call `changed` its arguments, the arguments after it."""
    kind, detail = outcome
    text = _form(detail) if kind == "return" else f"raise {detail}"
    if not changed:
        return text
    if after is None:
        return f"{text}, the arguments unchanged"
    args, kwargs = after
    changed = ", ".join([*map(_form, args), *(f"{key}={_form(value)}" for key, value in kwargs.items())])
    return f"{text}, leaving the arguments ({changed})"


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
