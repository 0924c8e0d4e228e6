"""Check that variants still pass their sample's tests.

A variant that no longer runs is not the same program under other names, and
comparing a model's perplexity on it with the original's would measure the
breakage, not memorisation. Variants are kept only if the benchmark's own
test passes in the sandbox.
"""

from __future__ import annotations

import ast
import io
import keyword
import token
import tokenize
from collections.abc import Sequence

from leaktrace.sandbox import SandboxLimits, SandboxResult, run_many


def reserved_names(test: str) -> frozenset[str]:
    """Identifiers in a sample's test code, to pass to `make_variants` as `reserved`.

    The test runs in the same module as the variant: a variant must not rename a
    program name the test uses (HumanEval/38's test calls `encode_cyclic`) nor
    introduce one the test defines (every test defines `check`).
    """
    tokens = tokenize.generate_tokens(io.StringIO(test).readline)
    return frozenset(tok.string for tok in tokens if tok.type == token.NAME and not keyword.iskeyword(tok.string))


def validation_program(code: str, test: str, entry_point: str) -> str:
    """The program HumanEval runs to judge a completion: code, then the test, then the check."""
    return f"{code}\n\n{test}\n\ncheck({entry_point})\n"


def validate_variants(
    items: Sequence[tuple[str, str, str]], limits: SandboxLimits, *, workers: int
) -> list[tuple[bool, str | None]]:
    """(valid, reason if not) for each (code, test, entry point) triple, in order."""
    verdicts: list[tuple[bool, str | None] | None] = []
    programs: list[str] = []
    for code, test, entry_point in items:
        program = validation_program(code, test, entry_point)
        try:
            ast.parse(program)
        except SyntaxError as error:
            verdicts.append((False, f"syntax: line {error.lineno}: {error.msg}"))
            continue
        except ValueError as error:  # e.g. null bytes
            verdicts.append((False, f"syntax: {error}"))
            continue
        verdicts.append(None)
        programs.append(program)
    results = iter(run_many(programs, limits, workers=workers))
    return [verdict or _verdict(next(results)) for verdict in verdicts]


def _verdict(result: SandboxResult) -> tuple[bool, str | None]:
    if result.status == "ok":
        return True, None
    return False, f"{result.status}: {result.error}"
