"""The K + 1 forms of each problem, made and proven equivalent before any choice.

A candidate form is the original under the configured transforms, applied
in this order, each from a stream seeded by the problem and the candidate:
``rename`` (identifiers renamed by meaning, `variants.renaming`; every
candidate a distinct renaming, so forms differ even where nothing else
applies), ``test_cases`` (SrDetection's tau_t: the docstring's examples
replaced by new ones whose outputs the original computes in the sandbox,
`variants.testcases`), ``T3`` (CodeSnitch's statement rewrites down to a
target line similarity, `mutate.statements`) and ``T1`` (a random layout,
`mutate.formatting`). The entry point and every name the tests use keep
their names, so the published record's tests and entry point stay as they
are. Every candidate is run against the problem's tests in the sandbox and
kept only if its record equals the original's byte for byte
(`variants.validate`); a problem keeps its first K + 1 valid distinct
candidates in generation order, fewer where fewer pass. The original itself
is candidate 0 and a form only when the maintainer asks (or, published
unchanged and untestable, when nothing else passes or the problem cannot run).

A form that changes a prompt (HumanEval's signature and docstring) must be
split back into prompt and solution: at the end of the line where the entry
point's first string statement (its docstring) ends, where the original's
prompt ends there; otherwise only forms that keep the prompt as it is
are usable."""

from __future__ import annotations

import ast
import io
import logging
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from leaktrace.data.io_tests import IoTests
from leaktrace.data.samples import not_runnable, sample_tests
from leaktrace.mutate.registry import Mutation, apply_mutation
from leaktrace.sandbox import SandboxLimits
from leaktrace.seeding import rng_for
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.renaming import make_variants
from leaktrace.variants.testcases import apply_plan, plan_test_cases, run_plans
from leaktrace.variants.validate import reserved_names, validate_variants

log = logging.getLogger(__name__)

TRANSFORMS = ("rename", "test_cases", "T3", "T1")  # in the order they apply
ORIGINAL = "original"


@dataclass(frozen=True)
class FormSettings:
    forms: int  # K: each problem gets up to K + 1 forms
    candidates: int  # candidate forms generated and validated per problem
    transforms: tuple[str, ...] = ("rename", "test_cases", "T3")
    names_per_form: int | None = None  # names each renaming changes; None: every renamable name
    t3_target: float = 0.9
    include_original: bool = False
    io_cases: int | None = None  # input/output tests run per problem (APPS); None: all

    def __post_init__(self):
        unknown = [t for t in self.transforms if t not in TRANSFORMS]
        if unknown or not self.transforms:
            raise ValueError(f"transforms {list(self.transforms)}: choose one or more of {TRANSFORMS}")
        if self.forms < 1:
            raise ValueError(f"forms (K) must be at least 1, got {self.forms}")
        if self.candidates < self.forms + 1 - self.include_original:
            raise ValueError(f"{self.candidates} candidates cannot give K + 1 = {self.forms + 1} forms")

    @property
    def size(self) -> int:
        return self.forms + 1


@dataclass(frozen=True)
class Problem:
    problem_id: str  # the record's id, which the keyed choice reads
    code: str
    prompt: str  # the part of ``code`` the record keeps in its prompt field ("" when it has none)
    row: dict  # the sample as the ingested table holds it (code, test, entry_point, test_format, ...)


def docstring_end(code: str, entry_point: str | None) -> int | None:
    """The offset just past the line where the entry point's first string statement ends."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == entry_point:
            for statement in node.body:
                if (
                    isinstance(statement, ast.Expr)
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                ):
                    lines = io.StringIO(code).readlines()
                    return sum(len(line) for line in lines[: statement.end_lineno])
            return None
    return None


def split_form(problem: Problem, text: str) -> tuple[str, str] | str:
    """(prompt, solution) of a form, or why it cannot be split back."""
    if not problem.prompt:
        return "", text
    entry_point = problem.row.get("entry_point")
    if docstring_end(problem.code, entry_point) == len(problem.prompt):
        end = docstring_end(text, entry_point)
        if end is None:
            return "the form's entry point has no docstring to end its prompt at"
        return text[:end], text[end:]
    if text.startswith(problem.prompt):
        return problem.prompt, text[len(problem.prompt) :]
    return "changes the prompt, which ends at no docstring here, so cannot be split back"


def _protected(problem: Problem, tests: str | IoTests) -> frozenset[str]:
    entry_point = problem.row.get("entry_point")
    return reserved_names(tests) | ({entry_point} if entry_point else set())


def _renamings(
    problem: Problem, names: NameProposer, settings: FormSettings, seed: int, protected: frozenset[str]
) -> list[str]:
    try:
        variants = make_variants(
            problem.code,
            problem.row.get("entry_point"),
            names,
            n=settings.candidates,
            rng=rng_for(seed, "watermark-forms", "rename", problem.problem_id),
            reserved=protected,
            names_per_variant=settings.names_per_form,
        )
    except (ValueError, SyntaxError) as error:
        log.info("%s: no renaming (%s)", problem.problem_id, error)
        return []
    return [v.text for v in variants]


def _mutated(
    kind: str, settings: FormSettings, text: str, entry_point: str | None, rng: random.Random, protected: frozenset[str]
) -> str:
    mutation = Mutation("T3", settings.t3_target) if kind == "T3" else Mutation("T1")
    try:
        return apply_mutation(mutation, text, "python", entry_point, rng, protected=protected).text
    except (ValueError, SyntaxError):
        return text


def candidate_texts(
    problems: Sequence[Problem],
    tests: Sequence[str | IoTests],
    names: NameProposer,
    settings: FormSettings,
    seed: int,
    limits: SandboxLimits,
    workers: int,
) -> list[list[tuple[str, str]]]:
    """Per runnable problem, its (text, generator) candidates before validation, the original not among them."""
    protected = [_protected(p, t) for p, t in zip(problems, tests, strict=True)]
    bases: list[list[tuple[str, list[str]]]] = []
    for problem, own in zip(problems, protected, strict=True):
        renamed = _renamings(problem, names, settings, seed, own) if "rename" in settings.transforms else []
        texts = [(text, ["rename"]) for text in renamed]
        if set(settings.transforms) - {"rename"}:  # other transforms make distinct forms of the original too
            texts += [(problem.code, []) for _ in range(settings.candidates - len(texts))]
        bases.append(texts)
    if "test_cases" in settings.transforms:
        planned = [i for i, p in enumerate(problems) if p.row.get("entry_point") and not isinstance(tests[i], IoTests)]
        plans = [
            plan_test_cases(
                problems[i].code,
                problems[i].row["entry_point"],
                tests[i],
                len(bases[i]),
                rng_for(seed, "watermark-forms", "test_cases", problems[i].problem_id),
            )
            for i in planned
        ]
        for i, plan, result in zip(planned, plans, run_plans(plans, limits, workers=workers), strict=True):
            entry_point = problems[i].row["entry_point"]
            transformed = apply_plan(plan, result, [(text, entry_point) for text, _ in bases[i]])
            bases[i] = [
                (new, [*applied, "test_cases"]) if new else (text, applied)
                for (text, applied), new in zip(bases[i], transformed.texts, strict=True)
            ]
    for kind in ("T3", "T1"):
        if kind not in settings.transforms:
            continue
        for problem, own, texts in zip(problems, protected, bases, strict=True):
            for j, (text, applied) in enumerate(texts):
                rng = rng_for(seed, "watermark-forms", kind, problem.problem_id, j)
                new = _mutated(kind, settings, text, problem.row.get("entry_point"), rng, own)
                texts[j] = (new, [*applied, kind]) if new != text else (text, applied)
    return [[(text, "+".join(applied) or ORIGINAL) for text, applied in texts] for texts in bases]


def make_forms(
    problems: Sequence[Problem],
    names: NameProposer,
    settings: FormSettings,
    seed: int,
    limits: SandboxLimits,
    workers: int,
    isolation: str,
) -> list[dict]:
    """Every candidate of every problem as a row of the forms table: ``form``
    is its index among the problem's forms (None where it is none), in the
    order the choice reads."""
    reasons = [not_runnable(p.row, "the benchmark") for p in problems]
    runnable = [i for i, reason in enumerate(reasons) if reason is None]
    tests = [sample_tests(problems[i].row, "the benchmark", settings.io_cases)[0] for i in runnable]
    generated = candidate_texts([problems[i] for i in runnable], tests, names, settings, seed, limits, workers)
    rows_of: dict[int, list[dict]] = {}
    programs, originals = [], []
    for i, problem in enumerate(problems):
        original = {
            "problem_id": problem.problem_id,
            "candidate": 0,
            "generator": ORIGINAL,
            "text": problem.code,
            "prompt": problem.prompt,
            "solution": problem.code[len(problem.prompt) :],
            "valid": None,
            "invalid_reason": None if reasons[i] is None else f"not runnable: {reasons[i]}",
            "isolation": isolation,
        }
        rows_of[i] = [original]
    for i, test, candidates in zip(runnable, tests, generated, strict=True):
        problem, entry_point = problems[i], problems[i].row.get("entry_point")
        base = len(programs)
        rows_of[i][0]["_program"] = base
        programs.append((problem.code, test, entry_point))
        originals.append(base)
        seen = {problem.code: 0}
        for number, (text, generator) in enumerate(candidates, start=1):
            row = {
                "problem_id": problem.problem_id,
                "candidate": number,
                "generator": generator,
                "text": text,
                "prompt": None,
                "solution": None,
                "valid": None,
                "invalid_reason": None,
                "isolation": isolation,
            }
            split = split_form(problem, text)
            if text in seen:
                row.update(valid=False, invalid_reason=f"same text as candidate {seen[text]}")
            elif isinstance(split, str):
                row.update(valid=False, invalid_reason=f"release: {split}")
            else:
                seen[text] = number
                row.update(prompt=split[0], solution=split[1], _program=len(programs))
                programs.append((text, test, entry_point))
                originals.append(base)
            rows_of[i].append(row)
    verdicts = validate_variants(programs, originals, limits, workers=workers) if programs else []
    rows = []
    for i in range(len(problems)):
        for row in rows_of[i]:
            if "_program" in row:
                row["valid"], row["invalid_reason"] = verdicts[row.pop("_program")]
        rows += _numbered(rows_of[i], settings)
    counts = Counter(sum(r["form"] is not None for r in rows if r["problem_id"] == p.problem_id) for p in problems)
    log.info(
        "%d problems; problems by number of forms: %s; candidates invalid: %s",
        len(problems),
        dict(sorted(counts.items())),
        dict(Counter((r["invalid_reason"] or "").split(":")[0] for r in rows if r["valid"] is False)),
    )
    return rows


def _numbered(rows: list[dict], settings: FormSettings) -> list[dict]:
    """The problem's rows with ``form`` set: the original first where asked
    for, then the valid candidates in order, K + 1 in all; where no
    variant passes (or the problem cannot run), the original alone."""
    original, candidates = rows[0], rows[1:]
    chosen = [original] if settings.include_original and original["valid"] else []
    chosen += [r for r in candidates if r["valid"]][: settings.size - len(chosen)]
    chosen = chosen or [original]
    numbers = {id(r): k for k, r in enumerate(chosen)}
    return [{**r, "form": numbers.get(id(r))} for r in rows]
