"""The documentation site: it builds with ``mkdocs build --strict`` (every
page in the navigation, every link and anchor resolved), loads nothing from
outside, its generated configuration reference covers every key of
config/schema.yaml with a description, its artifact schemas equal the
schemas the stages write with, the architecture page names every rule, and no
link in the README or the site leaves the repository except for a public URL.
The commands of its pages run in tests/test_readme.py."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_copy import REPO

DOCS = REPO / "docs"
BUILD_TIMEOUT = 300


def load_reference_pages():
    """The mkdocs hook module that generates the two reference pages."""
    spec = importlib.util.spec_from_file_location("reference_pages", DOCS / "hooks" / "reference_pages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


reference_pages = load_reference_pages()
SCHEMA = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{(result.stdout + result.stderr)[-4000:]}"
    return out


def test_the_site_builds_strict_with_every_page_in_its_navigation(site):
    built = {p.relative_to(site).with_suffix(".md").as_posix() for p in site.rglob("*.html")} - {"404.md"}
    written = {p.relative_to(DOCS).as_posix() for p in pages()}
    generated = {reference_pages.CONFIG_PAGE, reference_pages.ARTIFACTS_PAGE}
    assert written | generated <= built
    navigation = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]

    def targets(entries):
        for entry in entries:
            for value in entry.values():
                yield from targets(value) if isinstance(value, list) else [value]

    assert set(targets(navigation)) == written | generated, "every page is in the navigation, and only pages that exist"


def test_the_built_site_loads_no_script_style_font_or_image_from_outside(site):
    """Offline: no web fonts, no external scripts or styles (links to public
    pages for the reader to follow are fine)."""
    external = re.compile(
        r'<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)="(?:https?:)?//[^"]*"', re.IGNORECASE
    )
    found = {str(p.relative_to(site)): external.findall(p.read_text()) for p in site.rglob("*.html")}
    assert {page: tags for page, tags in found.items() if tags} == {}
    css = "".join(p.read_text() for p in site.rglob("*.css"))
    assert "fonts.googleapis" not in css and "@import url(http" not in css


# -- the configuration reference ------------------------------------------------


def property_pointers(node, pointer: str = "") -> set[str]:
    """The JSON pointer of every key the schema defines (every entry of a
    ``properties`` mapping), anywhere in it but in ``if`` conditions."""
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "if":
                continue
            if key == "properties" and isinstance(value, dict):
                for name, child in value.items():
                    found.add(f"{pointer}/properties/{name}")
                    found |= property_pointers(child, f"{pointer}/properties/{name}")
            else:
                found |= property_pointers(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found |= property_pointers(value, f"{pointer}/{i}")
    return found


def test_the_configuration_reference_covers_every_key_of_the_schema_with_its_description():
    rows = [row for rows in reference_pages.config_keys(SCHEMA).values() for row in rows]
    documented = {pointer for row in rows for pointer in row.pointers}
    expected = property_pointers(SCHEMA)
    assert len(expected) > 350
    assert sorted(expected - documented) == [], "keys of the schema missing from the reference"
    assert [row.path for row in rows if not row.description.strip()] == [], (
        "every key needs a description in config/schema.yaml (the reference prints it)"
    )
    page = reference_pages.configuration_page()
    assert [row.path for row in rows if f"| `{row.path}` |" not in page] == []


def test_the_configuration_reference_prints_type_default_and_description_as_the_schema_says():
    page = reference_pages.configuration_page()
    rows = {line.split(" | ")[0].strip("| `"): line for line in page.splitlines() if line.startswith("| `")}
    assert rows["variants.n"] == (
        "| `variants.n` | integer (≥ 1) | `10` | detector variants per sample (SrDetection: 10); "
        "fewer exist where names have few synonyms |"
    )
    assert "| one of `shuffled`, `canonical` | `shuffled` |" in rows["train.member_order"]
    assert "| string or `null` | `null` |" in rows["base_model.revision"]
    assert "| required |" in rows["base_model.path"]
    assert "[llm_model](#def-llm-model) | `null` |" in rows["llm.judge"]
    assert "list of `ast`, `ast+tt`, `llm`" in rows["score.methods.srdetection_graybox.generators"]
    assert (
        "| `audit.models[].testbed` |" in page and "exactly one of: `name` and `testbed`; or `name` and `path`" in page
    )
    assert "| `pretrain.settings.vocab_size` | integer (≥ 300) |" in page  # a shared definition, listed once
    assert "Used by `base_model.pretrain`, `reference_model.pretrain`." in page


def test_a_key_added_to_the_schema_appears_in_the_reference(tmp_path):
    schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())
    schema["properties"]["train"]["properties"]["new_knob"] = {
        "type": "integer",
        "minimum": 2,
        "default": 3,
        "description": "a knob a reader must find",
    }
    path = tmp_path / "schema.yaml"
    path.write_text(yaml.safe_dump(schema, allow_unicode=True))
    assert (
        "| `train.new_knob` | integer (≥ 2) | `3` | a knob a reader must find |"
        in reference_pages.configuration_page(path)
    )


# -- the artifact schemas ---------------------------------------------------------


def schema_constants() -> set[tuple[str, str]]:
    """(module, name) of every module-level ``NAME = pa.schema(`` in the package, by a plain text search."""
    found = set()
    for path in (REPO / "workflow" / "leaktrace").rglob("*.py"):
        module = ".".join(path.relative_to(REPO / "workflow").with_suffix("").parts)
        found |= {(module, m) for m in re.findall(r"^([A-Z][A-Z0-9_]*) = pa\.schema\(", path.read_text(), re.MULTILINE)}
    return found


def test_the_artifact_schemas_page_has_every_schema_as_the_stages_define_it():
    """Read from the source without importing the stages; checked here against
    the schemas the imported modules hold."""
    schemas = reference_pages.artifact_schemas()
    assert {(s.module, s.name) for s in schemas} == schema_constants()
    for schema in schemas:
        real = getattr(importlib.import_module(schema.module), schema.name)
        assert [(c.name, c.type) for c in schema.columns] == [(f.name, str(f.type)) for f in real], schema.name
    page = reference_pages.artifacts_page()
    assert all(f"### `{s.name}`" in page and all(f"| `{c.name}` |" in page for c in s.columns) for s in schemas)


def test_the_architecture_page_names_every_rule_and_only_schemas_that_exist():
    text = (DOCS / "architecture.md").read_text()
    rules = {
        name
        for smk in (REPO / "rules").glob("*.smk")
        for name in re.findall(r"^\s*(?:use )?rule (\w+)", smk.read_text(), re.MULTILINE)
    }
    assert sorted(r for r in rules if f"`{r}`" not in text and f" {r}" not in text) == []
    named = set(re.findall(r"\b([A-Z][A-Z0-9_]*_SCHEMA|SCHEMA)\b", text))
    assert named - {name for _, name in schema_constants()} == set()


# -- the Snakemake report's captions ---------------------------------------------


def test_every_figure_of_the_report_has_a_caption_that_says_how_to_read_it():
    """Every ``report(...)`` of the rules names a caption that exists, and a
    figure's caption says how to read it (tests/test_readme.py checks that the
    built report holds every caption). A path is a literal, a call of its
    rules/paths.smk function (``aggregate_file("roc.png")``) or a name."""
    calls = [
        m
        for smk in sorted((REPO / "rules").glob("*.smk"))
        for m in re.finditer(r'report\(\s*(f?"[^"]+"|\w+\([^()]*\)|[\w.\[\]]+),\s*caption="([^"]+)"', smk.read_text())
    ]
    assert len(calls) >= 10
    for call in calls:
        caption = (REPO / "rules" / call.group(2)).resolve()
        assert caption.is_file(), f"{call.group(1)}: no caption {call.group(2)}"
        if '.png"' in call.group(1):
            assert "how to read" in " ".join(caption.read_text().split()).lower(), (
                f"{caption.name} does not say how to read {call.group(1)}"
            )


# -- links ----------------------------------------------------------------------


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<(?:a|img)\b[^>]*\b(?:href|src)=\"([^\"]+)\"")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
GENERATED = {DOCS / reference_pages.CONFIG_PAGE, DOCS / reference_pages.ARTIFACTS_PAGE}  # made at build time


def documents() -> list[Path]:
    return [REPO / "README.md", *pages()]


def outside_links(text: str, base: Path) -> list[str]:
    """Links of a Markdown text (read from ``base``) that leave the repository
    or point at nothing in it, and code spans whose relative path climbs out
    of it (``../``); code blocks are commands, not links, and are left out."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    bad = []
    for match in LINK.finditer(prose):
        target = match.group(1) or match.group(2)
        if re.match(r"https?://", target) or target.startswith("#"):
            continue
        resolved = (base / target.split("#")[0]).resolve()
        # file:, mailto:, absolute paths: nothing a reader of the repository can open
        if (
            re.match(r"[a-z][a-z0-9+.-]*:", target)
            or target.startswith("/")
            or not resolved.is_relative_to(REPO)
            or not (resolved.exists() or resolved in GENERATED)
        ):
            bad.append(target)
    bad += [
        span
        for span in CODE_SPAN.findall(prose)
        if span.startswith("../") and not (REPO / span).resolve().is_relative_to(REPO)
    ]
    return bad


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_link_leaves_the_repository_except_to_a_public_url(path):
    assert outside_links(path.read_text(), path.parent) == []


def test_the_link_check_catches_what_a_clone_does_not_have():
    text = (
        "See [the design](../../shared/DESIGN.md), [a file](file:///etc/passwd), [ours](architecture.md), "
        "[gone](methods/nothing.md), [web](https://example.org/x), [here](#top), `../shared/papers/` and "
        "`results/report.html`.\n\n```bash\ncat ../shared/DESIGN.md\n```\n"
    )
    assert outside_links(text, DOCS) == [
        "../../shared/DESIGN.md",
        "file:///etc/passwd",
        "methods/nothing.md",
        "../shared/papers/",
    ]
