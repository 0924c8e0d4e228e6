"""Verification of candidate pairs as LessLeak-Bench's annotators decide:
a pair is a duplicate when it is an exact copy or semantically equivalent
(renamed identifiers, small additions or deletions, the same functionality
written differently), and a benchmark sample mixes problem text with code.

Boilerplate (licence headers, generated-file banners, imports, package
lines, StarCoder's metadata: :mod:`~leaktrace.leakage.boilerplate`) is
removed before anything is compared, except for the automated flag, which
reads the texts as LessLeak's MinHash step did. Every value behind a
decision is kept in the verdict (and in ``pairs.parquet``):

- the automated flag: shingle ``jaccard`` and ``containment`` of the
  benchmark in the corpus side on the texts as given (``flagged``: the
  preset's criterion: Jaccard or containment above its threshold; the
  ``lessleak`` preset: Jaccard alone, as LessLeak's released script);
  ``containment_corpus``, the corpus side in the benchmark;
- code overlap, problem text left out: ``code_containment`` and
  ``code_containment_corpus`` (token 3-grams of the code, comments and prose
  strings removed: :mod:`~leaktrace.leakage.statement`);
- problem-text overlap: ``statement``, the share of the benchmark's prose word
  3-grams found anywhere in the corpus text, over ``statement_words`` words;
- edits: ``lines`` and ``lines_corpus``, the longest common subsequence of
  the two sides' lines over each side's (:mod:`~leaktrace.leakage.features`);
- structure: ``similarity`` (the Indel similarity of the blind streams on the
  best-matching window), ``alignment`` and ``shape``
  (:mod:`~leaktrace.leakage.structure`);
- ``execution``: the corpus code against the benchmark's tests in the
  sandbox, where both sides run (:mod:`~leaktrace.leakage.execution`);
- ``score``: the learned verifier's probability of a duplicate.

The decision (:func:`decide`). With a model (``model``, the presets' default:
the one shipped, fitted on LessLeak-Bench's human labels by a rule stated in
advance, :mod:`~leaktrace.leakage.combiner`): ``layout`` and ``renamed`` for
what the annotation guideline defines as duplicates (:func:`by_definition`:
an exact or a consistently renamed copy); else ``execution`` where both
sides ran (pass: duplicate, fail: not); else ``model``, a duplicate when
``score`` reaches the model's threshold. ``clone_type`` names the form:
Type-1 (identical layout streams), Type-2 (identical renamed streams),
Type-3 (structure or similarity above their thresholds), else Type-4 for a
duplicate and none otherwise. With ``model: rules``, the first rule that
holds:

1. ``layout``: the layout streams are identical (modulo whitespace, layout,
   comments; in Python also imports): Type-1;
2. ``renamed``: the consistently renamed streams are identical: Type-2, a
   duplicate when only identifiers differ (``literals_equal``) or the texts
   are flagged (HumanEval/56 and /61 are one template with ``<>`` swapped for
   ``()``: Type-2 in form, not the same problem);
3. ``structure``: ``max(alignment, shape) >= structure`` and the code or the
   texts overlap (``max`` of the four containments ``>= overlap``): Type-3;
4. ``statement``: the benchmark has at least ``statement_min_words`` words of
   problem text and ``statement >= statement`` (the same problem, whatever
   the solution): Type-2 or Type-3 by its form, else Type-4;

   rules 3 and 4 do not hold where both sides ran and the corpus code fails
   the benchmark's tests (``execution`` ``fail``): HumanEval/7 and /29 share
   their docstring template and their code's shape, and filter by substring
   against by prefix: related, not duplicates;
5. ``execution``: both sides pass the benchmark's tests: Type-2 or Type-3
   by its form, else Type-4;
6. otherwise no duplicate; ``clone_type`` still names the form (Type-2 or
   Type-3 by structure) so that "related but not duplicate" pairs are visible.

In a scan, either way, :func:`supersede`: a unit that is as a whole a copy
of one sample is not a looser duplicate of another. The rules' thresholds
were chosen on the development half of a labelled set generated from
HumanEval and the standard library (:mod:`~leaktrace.leakage.devset`,
``benchmarks/verify_devset.py``). The optional LLM judge (:mod:`judge`)
overrides either where it answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from itertools import compress

from rapidfuzz.distance import Indel

from leaktrace.leakage import combiner
from leaktrace.leakage.boilerplate import strip_boilerplate
from leaktrace.leakage.execution import Executor, Program, callable_as, runnable
from leaktrace.leakage.features import line_overlap, lines, vector
from leaktrace.leakage.lexer import Token, blind_stream, keywords_for, layout_stream, lex_columns, renamed_stream
from leaktrace.leakage.statement import problem_words, split_prose, word_shingles, words
from leaktrace.leakage.structure import ALIGN_MARGIN, alignment, as_text, ast_shape, best_window, shape_similarity
from leaktrace.leakage.tokens import shingle_set, shingles, token_set
from leaktrace.sandbox import SandboxUnavailable

log = logging.getLogger(__name__)

CLONE_TYPES = ("type-1", "type-2", "type-3", "type-4")
RULES = ("model", "layout", "renamed", "structure", "statement", "execution", "judge", "copy_of_other", "none")
LOOSE_RULES = ("structure", "statement", "execution")
CODE_NGRAM = 3  # the verifier's own code n-grams (code_containment*), whatever the preset's shingles
COPY_MIN_TOKENS = 20  # the default preset's min_tokens: a smaller unit is not even scanned


@dataclass(frozen=True)
class VerifySettings:
    tokenizer: str
    ngram: int
    jaccard: float = 0.7
    containment: float | None = 0.8  # None: the flag is Jaccard alone
    flag: str = "shingles"  # what the flag's Jaccard compares: "shingles" (the preset's), "tokens" (LessLeak's script)
    type3_similarity: float = 0.8  # the form: Type-3 when similarity (or structure) reaches it
    structure: float = 0.75
    overlap: float = 0.3
    statement: float = 0.6
    statement_min_words: int = 12
    execute: bool = False
    model: str = "rules"  # "rules", or the learned verifier's model file ("shipped": resources/verify/verifier.json)


@dataclass
class Side:
    """What verification needs of one text, computed once."""

    shingles: set[
        str
    ]  # the automated flag's: of the whole text as given (boilerplate included), or its tokens (flag tokens)
    kinds: list[str]  # the tokens of the code (or of the text of a text-only sample), comments removed: their kinds
    texts: list[str]  # ... and their texts (lexer.lex_columns)
    language: str | None
    code_shingles: set[str]  # token n-grams of the code, prose strings removed
    prose: set[str]  # word 3-grams of the problem text (comments, docstrings, a text's words)
    prose_words: int
    words: set[str]  # word 3-grams of the whole text: where a statement is looked for
    blind: list[str]  # blind stream of the tokens (kinds, texts), the side's own keywords
    blind_code: list[str]  # blind stream of the code, prose strings removed
    shape: list[str] | None
    lines: list[str]  # the lines that carry something (leaktrace.leakage.features.lines)
    code: str  # what runs (the code, or the text)
    test: str | None = None
    entry_point: str | None = None
    problem: list[str] = field(default_factory=list)  # the problem text's words, in order (the statement channel's)

    @property
    def keywords(self) -> frozenset[str]:
        return keywords_for(self.language)

    @property
    def tokens(self) -> list[Token]:
        return [Token(k, t) for k, t in zip(self.kinds, self.texts, strict=True)]

    @cached_property
    def layout(self) -> list[str]:
        """The layout stream of the tokens, computed once however many pairs the side is in."""
        return layout_stream(zip(self.kinds, self.texts, strict=True))

    @cached_property
    def literals(self) -> list[str]:
        """The texts of the string and number tokens, in order."""
        return _literals(self.kinds, self.texts)

    def renamed(self, keywords: frozenset[str]) -> list[str]:
        """The renamed stream of the tokens under ``keywords``, computed once per keyword set."""
        cache = self.__dict__.setdefault("_renamed", {})
        if keywords not in cache:
            cache[keywords] = renamed_stream(zip(self.kinds, self.texts, strict=True), keywords)
        return cache[keywords]


def _literals(kinds: list[str], texts: list[str]) -> list[str]:
    return [t for k, t in zip(kinds, texts, strict=True) if k == "string" or k == "number"]


@dataclass(frozen=True)
class Verdict:
    tokens: int  # the benchmark side's code tokens, boilerplate removed
    jaccard: float
    containment: float
    containment_corpus: float
    code_containment: float
    code_containment_corpus: float
    statement: float
    statement_words: int
    similarity: float
    alignment: float
    shape: float | None
    lines: float  # LCS of the two sides' lines over the benchmark's lines
    lines_corpus: float  # ... over the corpus side's lines
    layout_equal: bool
    renamed_equal: bool
    aligned: bool
    literals_equal: bool
    flagged: bool  # LessLeak's automated criterion: exact Jaccard (or containment) above threshold
    execution: str | None  # pass, fail, reference_fails; None: not run (execution_note says why)
    execution_note: str | None
    score: float | None  # the learned verifier's probability of a duplicate (None: the rules decide)
    clone_type: str  # type-1, type-2, type-3, type-4 or none
    duplicate: bool
    decided_by: str  # the rule (RULES) that made the decision
    # an input leak: not a duplicate of the code, but the problem text is there
    # (``statement`` rule's thresholds; LessLeak counts it as leakage)
    input_leak: bool = False

    def as_row(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def decide(v: Verdict, s: VerifySettings, threshold: float | None = None) -> tuple[str, bool, str]:
    """(clone type, duplicate, rule) from a verdict's values: the learned
    verifier's ``score`` against ``threshold`` where there is a score
    (execution, where it ran, overrides it), else the rules under ``s``'s
    thresholds."""
    structure = max(v.alignment, v.shape or 0.0)
    structural = structure >= s.structure or v.similarity >= s.type3_similarity
    overlap = max(v.containment, v.containment_corpus, v.code_containment, v.code_containment_corpus)
    differs = v.execution == "fail"  # both run, and the corpus code fails the benchmark's tests
    if v.score is not None:
        form = "type-1" if v.layout_equal else "type-2" if v.renamed_equal else "type-3" if structural else None
        if by_definition(v):
            return form, True, "layout" if v.layout_equal else "renamed"
        if v.execution in ("pass", "fail"):
            return (
                (form or "type-4", True, "execution") if v.execution == "pass" else (form or "none", False, "execution")
            )
        duplicate = v.score >= threshold
        return (form or "type-4") if duplicate else (form or "none"), duplicate, "model"
    if v.layout_equal:
        return "type-1", True, "layout"
    if v.renamed_equal:
        if v.literals_equal or v.flagged:
            return "type-2", True, "renamed"
    elif structure >= s.structure and overlap >= s.overlap and not differs:
        return "type-3", True, "structure"
    form = "type-2" if v.renamed_equal else "type-3" if structural else None
    if v.statement_words >= s.statement_min_words and v.statement >= s.statement and not differs:
        return form or "type-4", True, "statement"
    if v.execution == "pass":
        return form or "type-4", True, "execution"
    return form or "none", False, "none"


def problem_text_found(v: Verdict, s: VerifySettings) -> bool:
    """The ``statement`` rule's test: at least ``statement_min_words`` words of
    problem text, ``statement`` of its word 3-grams in the corpus text, and
    no failing run of the corpus code against the benchmark's tests."""
    return v.statement_words >= s.statement_min_words and v.statement >= s.statement and v.execution != "fail"


def leak_kind(v: Verdict, s: VerifySettings) -> str | None:
    """What a pair leaks: ``code`` (a duplicate of the solution), ``input``
    (the problem text without the solution: :attr:`Verdict.input_leak`, or a
    duplicate that is no exact or renamed copy, whose problem text is found
    and whose code overlaps less than ``overlap``), or None."""
    if not v.duplicate:
        return "input" if v.input_leak else None
    if v.decided_by in ("layout", "renamed") or not problem_text_found(v, s):
        return "code"
    return "input" if max(v.code_containment, v.code_containment_corpus) < s.overlap else "code"


def by_definition(v: Verdict) -> bool:
    """A duplicate by the annotation guideline's own words, whatever a model
    says: an exact copy ("identical except for variations in formatting or
    comments": identical layout streams) or a renamed one ("renamed
    identifiers ... while preserving the same logic": identical renamed
    streams, literals equal), of at least ``COPY_MIN_TOKENS`` tokens left
    after boilerplate (a class header alone matches anything)."""
    return v.tokens >= COPY_MIN_TOKENS and (v.layout_equal or (v.renamed_equal and v.literals_equal))


def _copy(v: Verdict) -> bool:
    """Type-1, or Type-2 with equal literals or flagged texts: nothing for execution to add."""
    return v.layout_equal or (v.renamed_equal and (v.literals_equal or v.flagged))


def _exact(v: Verdict) -> bool:
    """An exact or renamed copy, as a whole (no window)."""
    return not v.aligned and (
        v.decided_by in ("layout", "renamed")
        or (v.decided_by == "model" and v.duplicate and v.clone_type in ("type-1", "type-2"))
    )


def _loose(v: Verdict) -> bool:
    return v.decided_by in LOOSE_RULES or (
        v.decided_by == "model" and v.duplicate and v.clone_type in ("type-3", "type-4")
    )


def supersede(verdicts: list[Verdict], s: VerifySettings | None = None) -> list[Verdict]:
    """The verdicts of one corpus unit against the samples it is a candidate
    of: when the unit as a whole (no window) is an exact or renamed copy of
    one sample, its looser matches with other samples are not duplicates
    (``copy_of_other``). A unit holds one solution: a copy of HumanEval/7 is
    not also a duplicate of its look-alike /29 because they share a shape,
    nor an input leak of any sample. Of the input leaks of one unit (its
    problem text found, not its code), only the problem whose text is found
    most completely stays (given the settings ``s`` that tell them):
    look-alike problems share docstring templates."""
    if any(_exact(v) for v in verdicts):
        verdicts = [
            replace(v, duplicate=False, decided_by="copy_of_other", input_leak=False)
            if _loose(v)
            else replace(v, input_leak=False)
            for v in verdicts
        ]
    inputs = [v.statement for v in verdicts if s is not None and leak_kind(v, s) == "input"]
    if len(inputs) < 2:
        return verdicts
    top = max(inputs)  # one problem text: the statement found most completely
    return [
        v
        if leak_kind(v, s) != "input" or v.statement == top
        else replace(v, duplicate=False, decided_by="copy_of_other")
        if v.duplicate
        else replace(v, input_leak=False)
        for v in verdicts
    ]


class Verifier:
    def __init__(self, settings: VerifySettings, executor: Executor | None = None):
        self.s = settings
        self.executor = executor if settings.execute else None
        self.combiner = None if settings.model == "rules" else combiner.load(settings.model)

    def side(
        self,
        text: str,
        language: str | None,
        code: str | None = None,
        *,
        test: str | None = None,
        entry_point: str | None = None,
    ) -> Side:
        """``text``'s shingles (the automated flag's, on the text as given);
        everything else after boilerplate is removed (licence headers,
        imports, ...: :mod:`~leaktrace.leakage.boilerplate`): the tokens of
        ``code`` when given (a benchmark sample's problem text and code are
        compared together, its clone type judged on its code), else of
        ``text``. Problem text outside ``code`` (a statement before it)
        counts as prose."""
        code = text if code is None else code
        clean_text = strip_boilerplate(text)
        clean_code = clean_text if code == text else strip_boilerplate(code)
        all_kinds, all_texts = lex_columns(clean_code, language, comments=True)
        code_prose, code_kinds, code_texts = split_prose(all_kinds, all_texts)
        # a text-only sample's words are its prose, and its tokens are compared as code
        prose = problem_words(clean_text, clean_code, code_prose, language, "text")
        kw = keywords_for(language)
        if "comment" in all_kinds:
            keep = list(map("comment".__ne__, all_kinds))
            kinds, texts = list(compress(all_kinds, keep)), list(compress(all_texts, keep))
        else:
            kinds, texts = all_kinds, all_texts
        blind = blind_stream(zip(kinds, texts, strict=True), kw)
        # the code tokens are the tokens when no string is prose (comments are already out): one stream
        same = len(code_kinds) == len(kinds)
        return Side(
            shingles=(
                token_set(text, self.s.tokenizer)
                if self.s.flag == "tokens"
                else shingle_set(text, self.s.tokenizer, self.s.ngram)
            ),
            kinds=kinds,
            texts=texts,
            language=language,
            code_shingles=set(shingles(code_texts, CODE_NGRAM)),
            prose=word_shingles(prose),
            prose_words=len(prose),
            words=word_shingles(words(clean_text)),
            blind=blind,
            blind_code=blind if same else blind_stream(zip(code_kinds, code_texts, strict=True), kw),
            shape=ast_shape(clean_code) if language in (None, "python") else None,
            lines=lines(clean_text, language),
            code=code,
            test=test,
            entry_point=entry_point,
            problem=prose,
        )

    def features(self, bench: Side, corpus: Side) -> Verdict:
        """The values behind a decision, execution not yet run, decided without it."""
        return self.verdicts([(bench, corpus)])[0]

    def verdicts(self, pairs: list[tuple[Side, Side]]) -> list[Verdict]:
        """:meth:`features` of many pairs (the learned verifier scores them in one batch)."""
        values = [self._values(bench, corpus) for bench, corpus in pairs]
        if self.combiner is not None and values:
            scores = self.combiner.probabilities([vector(vars(v)) for v in values])
            values = [replace(v, score=float(p)) for v, p in zip(values, scores, strict=True)]
        return [self.decided(v) for v in values]

    def _values(self, bench: Side, corpus: Side) -> Verdict:
        """The values behind a decision, undecided."""
        inter = len(bench.shingles & corpus.shingles)
        union = len(bench.shingles) + len(corpus.shingles) - inter
        jaccard = inter / union if union else 0.0
        containment = inter / len(bench.shingles) if bench.shingles else 0.0
        containment_corpus = inter / len(corpus.shingles) if corpus.shingles else 0.0
        code_inter = len(bench.code_shingles & corpus.code_shingles)
        code_containment = code_inter / len(bench.code_shingles) if bench.code_shingles else 0.0
        code_containment_corpus = code_inter / len(corpus.code_shingles) if corpus.code_shingles else 0.0
        statement = len(bench.prose & corpus.words) / len(bench.prose) if bench.prose else 0.0
        flagged = jaccard >= self.s.jaccard or (self.s.containment is not None and containment >= self.s.containment)
        kw = bench.keywords
        n_bench = len(bench.kinds)
        c_kinds, c_texts = corpus.kinds, corpus.texts
        b_blind = bench.blind  # kw is the bench side's keywords
        c_blind = corpus.blind if corpus.keywords == kw else blind_stream(zip(c_kinds, c_texts, strict=True), kw)
        aligned = False
        b_text, c_text = whole = as_text(b_blind, c_blind)  # one character a token
        if n_bench and len(c_kinds) > ALIGN_MARGIN * n_bench:
            window = best_window(b_text, c_text)
            if window is not None:
                c_kinds, c_texts = c_kinds[window[0] : window[1]], c_texts[window[0] : window[1]]
                c_text = c_text[window[0] : window[1]]  # the stream maps token to token
                aligned = True
        # (the Indel similarity sees only which tokens are equal: the window's text is the whole's, sliced)
        similarity = Indel.normalized_similarity(b_text, c_text) if n_bench or c_kinds else 0.0
        # both streams map token to token, so sides of different lengths differ (no stream needed);
        # a whole side's streams are computed once (Side), a window's here
        same_length = bool(n_bench) and n_bench == len(c_kinds)
        if aligned:
            layout_equal = same_length and bench.layout == layout_stream(zip(c_kinds, c_texts, strict=True))
            renamed_equal = same_length and bench.renamed(kw) == renamed_stream(zip(c_kinds, c_texts, strict=True), kw)
            literals_equal = bench.literals == _literals(c_kinds, c_texts)
        else:
            layout_equal = same_length and bench.layout == corpus.layout
            renamed_equal = same_length and bench.renamed(kw) == corpus.renamed(kw)
            literals_equal = bench.literals == corpus.literals
        note = runnable(bench.language, bench.test, bench.entry_point) or (
            None if self.executor else "execution not enabled"
        )
        in_lines, in_corpus_lines = line_overlap(bench.lines, corpus.lines)
        v = Verdict(
            n_bench,
            jaccard,
            containment,
            containment_corpus,
            code_containment,
            code_containment_corpus,
            statement,
            bench.prose_words,
            similarity,
            alignment(
                bench.blind_code,
                corpus.blind_code,
                whole if bench.blind_code is b_blind and corpus.blind_code is c_blind else None,
            ),
            shape_similarity(bench.shape, corpus.shape),
            in_lines,
            in_corpus_lines,
            layout_equal,
            renamed_equal,
            aligned,
            literals_equal,
            flagged,
            None,
            note,
            None,
            "none",
            False,
            "none",
        )
        return v

    def decided(self, v: Verdict) -> Verdict:
        clone, duplicate, rule = decide(v, self.s, self.combiner.threshold if self.combiner else None)
        return replace(
            v,
            clone_type=clone,
            duplicate=duplicate,
            decided_by=rule,
            input_leak=not duplicate and problem_text_found(v, self.s),
        )

    def program(self, bench: Side, corpus: Side) -> tuple[Program, Program] | str:
        """The two programs of a runnable pair, or why it is not runnable."""
        why = runnable(bench.language, bench.test, bench.entry_point)
        if why:
            return why
        code, why = callable_as(corpus.code, bench.entry_point)
        if code is None:
            return why
        return Program(bench.code, bench.test, bench.entry_point), Program(code, bench.test, bench.entry_point)

    def execute(self, items: list[tuple[Side, Side, Verdict]], *, always: bool = False) -> list[Verdict]:
        """Verdicts with execution run where the pair is runnable and (unless
        ``always``) not already an exact or renamed copy (:func:`_copy`)."""
        out = [v for _, _, v in items]
        if self.executor is None:
            return out
        todo, programs = [], []
        for i, (bench, corpus, v) in enumerate(items):
            prog = self.program(bench, corpus)
            if isinstance(prog, str):
                out[i] = replace(v, execution_note=prog)
            elif _copy(v) and not always:
                out[i] = replace(v, execution_note="decided without execution")
            else:
                todo.append(i)
                programs.append(prog)
        if not programs:
            return out
        try:
            statuses = self.executor.equivalence(programs)
        except SandboxUnavailable as err:  # e.g. no namespaces here and `isolation: full`: the rules alone decide
            log.warning("execution equivalence skipped: %s", err)
            for i in todo:
                out[i] = replace(out[i], execution_note=f"sandbox unavailable: {err}")
            return out
        for i, status in zip(todo, statuses, strict=True):
            out[i] = self.decided(replace(out[i], execution=status, execution_note=None))
        return out

    def verify(self, bench: Side, corpus: Side) -> Verdict:
        return self.execute([(bench, corpus, self.features(bench, corpus))])[0]
