"""A general-text corpus read from records through the benchmark reader
(source ``records``: RefinedWeb's ``content`` for SrDetection's 1:5 mix):
empty documents skipped, the first ``limit`` kept, a missing field an error
naming the record."""

import json
from dataclasses import replace

import pytest

from leaktrace.data.corpora import corpus_documents
from leaktrace.errors import InputError
from leaktrace.settings.ingest import CorpusEntry

RECORDS = [
    {"url": "a", "content": "The first page."},
    {"url": "b", "content": "  "},
    {"url": "c", "content": "A second page."},
    {"url": "d", "content": "A third page."},
]


def test_records_corpus_reads_the_text_field_skipping_empty_documents(tmp_path):
    path = tmp_path / "web.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    settings = CorpusEntry(source="records", exclude=(), format="jsonl", path=str(path), text="content", shards=1)
    documents = corpus_documents("web", settings)
    assert [d.text for d in documents] == ["The first page.", "A second page.", "A third page."]
    assert [d.doc_id for d in documents] == ["web/line 1", "web/line 3", "web/line 4"] and documents[0].source == str(
        path
    )
    assert [d.text for d in corpus_documents("web", replace(settings, limit=2))] == [
        "The first page.",
        "A second page.",
    ]
    with pytest.raises(InputError, match="no field 'text'"):
        corpus_documents("web", replace(settings, text="text"))


def test_package_corpus_reads_an_installed_distributions_python_files():
    from importlib.metadata import version

    settings = CorpusEntry(source="package", package="networkx", exclude=("networkx/tests/*", "networkx/*/tests/*"))
    documents = corpus_documents("nx", settings)
    ids = [d.doc_id for d in documents]
    assert ids == sorted(ids) and "networkx/__init__.py" in ids and "networkx/algorithms/cycles.py" in ids
    assert all(i.startswith("networkx/") and i.endswith(".py") for i in ids)
    assert not any(i.startswith("networkx/tests/") or i.split("/")[2:3] == ["tests"] for i in ids)
    assert "def " in next(d.text for d in documents if d.doc_id == "networkx/algorithms/cycles.py")
    assert version("networkx") == "3.6.1"  # requirements.lock: the sham's corpus is pinned by the lock
    with pytest.raises(ValueError, match="corpus gone: package 'no-such-package-here' is not installed"):
        corpus_documents("gone", CorpusEntry(source="package", package="no-such-package-here", exclude=()))


def test_the_corpus_commands_name_a_mistyped_corpus_key(tmp_path, capsys):
    from leaktrace.cli import main

    settings = {"source": "stdlib", "exclude": [], "shards": "4"}
    argv = ["ingest-corpus", "--name", "stdlib", "--settings", json.dumps(settings), "--part", "0"]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--output", str(tmp_path / "part-0.parquet")])
    assert stopped.value.code == 2
    assert "config corpora.stdlib.shards: expected an integer, got '4'" in capsys.readouterr().err
    corpora = {
        "code": {"name": "stdlib", "settings": {"source": "stdlib", "exclude": "test/*"}},
        "text": {"name": "pydoc", "settings": {"source": "pydoc", "exclude": []}},
    }
    with pytest.raises(SystemExit) as stopped:
        main(["pretrain", "--corpora", json.dumps(corpora), "--settings", "{}", "--output-dir", str(tmp_path / "m")])
    assert stopped.value.code == 2
    assert "config corpora.stdlib.exclude: expected a list, got 'test/*'" in capsys.readouterr().err
