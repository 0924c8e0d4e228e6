"""The Java, C and C++ part of the verifier's development set: the C-family
mutations change only what their clone type allows (and keep C compiling),
the builder labels and counts its pairs as documented, and the verifier
calls copies of these languages duplicates and unrelated functions not.
The figures come from benchmarks/check_cfamily_devset.py."""

import random
import shutil
import subprocess
from collections import Counter

import pytest

from leaktrace.languages import C_KEYWORDS
from leaktrace.leakage.devset import CFAMILY, build_cfamily, fixtures, half_of
from leaktrace.leakage.lexer import layout_stream, lex, renamed_stream
from leaktrace.leakage.pairs import settings_for
from leaktrace.leakage.verify import Verifier
from leaktrace.mutate import cfamily
from leaktrace.variants.naming import NameProposer

# T2a's synonyms from a small table (the dev set's WordNet takes seconds to load)
SYNONYMS = {
    "best": ("top",),
    "values": ("items", "numbers"),
    "value": ("val",),
    "count": ("number",),
    "total": ("sum",),
    "note": ("remark",),
    "text": ("string",),
}
NAMES = NameProposer(lambda word: SYNONYMS.get(word, ()), Counter())

C_CODE = """#include <stdio.h>
#include <string.h>

struct item {
    int value;
    struct item *next;
};

/* Sum the values of the list and print how many items it had. */
int total_of(struct item *head, const char *label)
{
    int total = 0;
    size_t count = 0;
    for (struct item *it = head; it != NULL; it = it->next) {
        total += it->value;
        count++;
    }
    printf("%s: %zu items, %d\\n", label, count, total);
    if (count == 0)
        total = -1;
    else
        total = total * 2;
    return total + (int)strlen(label);
}
"""

JAVA_CODE = """class Solution {
    /** Return the largest value of the array, or zero for an empty one. */
    public int largest(int[] values) {
        int best = 0;
        for (int i = 0; i < values.length; i++) {
            best = Math.max(best, values[i]);
        }
        String note = String.valueOf(best);
        return note.length() > 0 ? best : 0;
    }
}
"""


def _names(code):
    return [t.text for t in lex(code, "c") if t.kind == "name"]


def test_renaming_is_consistent_and_spares_keywords_library_names_and_members():
    m = cfamily.mutate("T2b", C_CODE, "c", random.Random(0))
    renames = m.details["renames"]
    assert set(renames) == {"head", "label", "total", "count", "it"}  # declared locals and parameters only
    before, after = lex(C_CODE, "c"), lex(m.text, "c")
    assert renamed_stream(before, C_KEYWORDS) == renamed_stream(after, C_KEYWORDS)  # consistent, nothing else moved
    kept = {"printf", "strlen", "size_t", "NULL", "item", "value", "next", "total_of", "stdio", "string", "h"}
    assert kept <= set(_names(m.text)) and not set(renames) & set(_names(m.text))
    assert "struct item" in m.text and "->next" in m.text and "#include <stdio.h>" in m.text
    java = cfamily.mutate("T2b", JAVA_CODE, "java", random.Random(1))
    assert set(java.details["renames"]) == {"values", "best", "i", "note"}
    assert all(name in java.text for name in ("Math.max", "String.valueOf", ".length", "largest", "class Solution"))
    synonyms = cfamily.mutate("T2a", JAVA_CODE, "java", random.Random(2), NAMES)
    assert synonyms.changed and renamed_stream(lex(JAVA_CODE, "java"), C_KEYWORDS) == renamed_stream(
        lex(synonyms.text, "java"), C_KEYWORDS
    )


def test_type1_changes_layout_and_comments_only():
    for language, code in (("c", C_CODE), ("java", JAVA_CODE)):
        m = cfamily.mutate("T1", code, language, random.Random(3))
        assert m.text != code and m.similarity < 1.0
        assert layout_stream(lex(m.text, language)) == layout_stream(lex(code, language))  # comments dropped by lex
        comments = lambda text: [t.text for t in cfamily.tokens(text) if t.kind == "comment"]  # noqa: E731
        assert comments(m.text) != comments(code)
    assert cfamily.strip_comments(C_CODE).count("/*") == 0 and "int total_of" in cfamily.strip_comments(C_CODE)


def test_type3_edits_statements_in_code_blocks_only():
    lines = C_CODE.split("\n")
    stmts = {lines[i].strip() for i in cfamily.statement_lines(C_CODE)}
    assert "int total = 0;" in stmts and "count++;" in stmts
    assert not {"total = -1;", "total = total * 2;", "int value;"} & stmts  # unbraced bodies, a struct member
    m = cfamily.mutate("T3-0.7", C_CODE, "c", random.Random(4))
    assert m.changed and m.similarity <= 0.75 and sum(m.details["edits"].values()) >= 2
    assert renamed_stream(lex(m.text, "c"), C_KEYWORDS) != renamed_stream(lex(C_CODE, "c"), C_KEYWORDS)
    assert m.text == cfamily.mutate("T3-0.7", C_CODE, "c", random.Random(4)).text  # seeded
    with pytest.raises(ValueError, match="C-family"):
        cfamily.mutate("T1", "def f(): pass\n", "python", random.Random(0))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler here")
def test_c_mutations_still_compile(tmp_path):
    for k, (task, code, _) in enumerate(fixtures("c")[:2]):
        for kind in ("T1", "T2b", "hybrid-0.8"):
            path = tmp_path / f"{task}-{kind}.c"
            path.write_text(cfamily.mutate(kind, code, "c", random.Random(k), NAMES).text)
            result = subprocess.run(["gcc", "-std=c11", "-fsyntax-only", str(path)], capture_output=True, text=True)
            assert result.returncode == 0, (task, kind, result.stderr)


def test_fixtures_are_small_programs_with_other_implementations():
    for language in CFAMILY:
        tasks = fixtures(language)
        assert len(tasks) >= 15 and all(alts for _, _, alts in tasks)
        assert all(
            any(t.kind == "comment" and len(t.text.split()) >= 12 for t in cfamily.tokens(code)) for _, code, _ in tasks
        )  # each states its problem


def test_builder_counts_and_labels(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    for name in ("total_of", "twice", "shout"):
        body = {
            "total_of": C_CODE,
            "twice": "/* Double every value of the array in place, from the first to the last one. */\n"
            "void twice(int *xs, int n)\n{\n    for (int i = 0; i < n; i++)\n        xs[i] *= 2;\n}\n",
            "shout": "#include <ctype.h>\n\n/* Turn every letter of the text into a capital letter, leaving the rest. */\n"
            "void shout(char *text)\n{\n    int count = 0;\n    for (; *text; text++) {\n"
            "        *text = (char)toupper((unsigned char)*text);\n        count++;\n    }\n}\n",
        }[name]
        (root / f"{name}.c").write_text(body)
    (root / "twice.alt1.c").write_text("void twice(int *v, int n)\n{\n    while (n-- > 0)\n        v[n] += v[n];\n}\n")
    pairs = build_cfamily(languages=("c",), root=tmp_path, names=NAMES)
    assert len({p["id"] for p in pairs}) == len(pairs)
    kinds = Counter(p["kind"] for p in pairs)
    assert kinds["nearest-task"] == kinds["unrelated"] == 3
    assert kinds["nearest-alternative"] == 2  # twice's: no other task has an other implementation
    assert kinds["alternative"] == kinds["statement+alternative"] == 1
    assert kinds["T1"] == kinds["T2b"] == kinds["T2b-nodoc"] == 3
    for p in pairs:
        assert (
            p["language"] == "c" and p["half"] == half_of(p["group"]) and p["duplicate"] == (p["clone_type"] != "none")
        )
        expected = {
            "T1": "type-1",
            "T2a": "type-2",
            "T2b": "type-2",
            "alternative": "type-4",
            "nearest-task": "none",
            "unrelated": "none",
            "nearest-alternative": "none",
        }
        assert p["clone_type"] == expected.get(p["kind"].removesuffix("-nodoc"), p["clone_type"])
        if p["kind"].startswith(("T3", "hybrid")):
            assert p["clone_type"] == "type-3"
        if p["kind"].endswith("-nodoc"):
            assert "/*" not in p["corpus_text"]
    alt = next(p for p in pairs if p["kind"] == "statement+alternative")
    assert alt["corpus_text"].startswith("/* Double every value") and "while (n-- > 0)" in alt["corpus_text"]
    unrelated = next(p for p in pairs if p["kind"] == "unrelated" and p["group"] == "c/twice")
    assert "twice" not in unrelated["corpus_text"]
    assert kinds["T2a"] == 2  # twice has no name with a synonym
    assert pairs == build_cfamily(languages=("c",), root=tmp_path, names=NAMES)  # deterministic


@pytest.mark.parametrize("model", ["shipped", "rules"])
def test_verifier_on_java_c_and_cpp(model):
    v = Verifier(settings_for("default", execute=False, model=model))

    def verdict(bench, corpus, language):
        return v.verify(v.side(bench, language), v.side(corpus, language))

    java = fixtures("java")[0][1]
    exact = verdict(java, java, "java")
    assert (exact.duplicate, exact.clone_type, exact.decided_by) == (True, "type-1", "layout")
    renamed = cfamily.mutate("T2b", C_CODE, "c", random.Random(5)).text
    copy = verdict(C_CODE, renamed, "c")
    assert (copy.duplicate, copy.clone_type, copy.decided_by) == (True, "type-2", "renamed")
    assert not copy.layout_equal
    cpp = dict((task, code) for task, code, _ in fixtures("cpp"))
    other = verdict(cpp["bfs_distances"], cpp["to_upper"], "cpp")
    assert (other.duplicate, other.decided_by) == (False, "none" if model == "rules" else "model")
