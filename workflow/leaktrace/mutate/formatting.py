"""Mutation T1 (Type-1 clone): the same tokens laid out in a randomly drawn style.

CodeSnitch reformats each sample with a random style: indent width, column
limit, spaces around operators and delimiters, blank lines, where lines
split. Python goes through yapf (what CodeSnitch's code uses), whose knobs
cover all of these; Java, C and C++ through clang-format (the `clang-format`
wheel's binary). Both change only whitespace and line breaks outside string
literals, so the program is the same; the style is drawn from a seeded
stream, so a rerun gives the same text.
"""

from __future__ import annotations

import random
import subprocess

import clang_format
from yapf.yapflib.yapf_api import FormatCode

CLANG_LANGUAGES = {"java": "Main.java", "c": "main.c", "cpp": "main.cpp", "c++": "main.cpp"}

# Redraws when a drawn style happens to leave the text as it was.
_DRAWS = 8


def python_style(rng: random.Random) -> dict:
    """A yapf style: one draw per knob, from values programmers use."""
    return {
        "based_on_style": rng.choice(["pep8", "google", "facebook", "yapf"]),
        "indent_width": rng.choice([2, 3, 4, 8]),
        "use_tabs": rng.random() < 0.15,
        "continuation_indent_width": rng.choice([2, 4, 8]),
        "column_limit": rng.choice([40, 60, 79, 100, 120]),
        "blank_lines_around_top_level_definition": rng.choice([1, 2, 3]),
        "blank_line_before_nested_class_or_def": rng.random() < 0.5,
        "spaces_around_power_operator": rng.random() < 0.5,
        "spaces_around_default_or_named_assign": rng.random() < 0.3,
        "spaces_around_dict_delimiters": rng.random() < 0.3,
        "spaces_around_list_delimiters": rng.random() < 0.3,
        "spaces_around_tuple_delimiters": rng.random() < 0.3,
        "spaces_around_subscript_colon": rng.random() < 0.3,
        "space_inside_brackets": rng.random() < 0.2,
        "spaces_before_comment": rng.choice([1, 2, 4]),
        "split_before_logical_operator": rng.random() < 0.5,
        "split_before_arithmetic_operator": rng.random() < 0.5,
        "split_before_first_argument": rng.random() < 0.3,
        "split_all_comma_separated_values": rng.random() < 0.15,
        "dedent_closing_brackets": rng.random() < 0.3,
        "coalesce_brackets": rng.random() < 0.5,
        "arithmetic_precedence_indication": rng.random() < 0.3,
    }


def clang_style(rng: random.Random) -> str:
    """A clang-format style as its inline YAML."""
    options = {
        "BasedOnStyle": rng.choice(["LLVM", "Google", "Chromium", "Mozilla", "WebKit", "Microsoft", "GNU"]),
        "IndentWidth": rng.choice([2, 3, 4, 8]),
        "ColumnLimit": rng.choice([60, 80, 100, 120]),
        "UseTab": rng.choice(["Never", "Never", "Always"]),
        "BreakBeforeBraces": rng.choice(["Attach", "Allman", "Linux", "Stroustrup", "GNU"]),
        "SpaceBeforeParens": rng.choice(["ControlStatements", "Always", "Never"]),
        "SpacesInParens": rng.choice(["Never", "Never", "Custom"]),
        "AllowShortFunctionsOnASingleLine": rng.choice(["None", "Inline", "All"]),
        "AllowShortIfStatementsOnASingleLine": rng.choice(["Never", "WithoutElse"]),
        "MaxEmptyLinesToKeep": rng.choice([0, 1, 2]),
        "PointerAlignment": rng.choice(["Left", "Right", "Middle"]),
        "SortIncludes": "Never",  # include order can matter in C++
    }
    if options["SpacesInParens"] == "Custom":
        options["SpacesInParensOptions"] = "{InConditionalStatements: true, Other: true}"
    return "{" + ", ".join(f"{key}: {value}" for key, value in options.items()) + "}"


def reformat_python(code: str, style: dict) -> str:
    text, _ = FormatCode(code, style_config=style)
    return text


def reformat_clang(code: str, language: str, style: str) -> str:
    """`code` through clang-format; the file name it is told tells it the language."""
    result = subprocess.run(
        [
            clang_format.get_executable("clang-format"),
            f"--style={style}",
            f"--assume-filename={CLANG_LANGUAGES[language]}",
        ],
        input=code,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        raise ValueError(f"clang-format failed: {result.stderr.strip()[:200]}")
    return result.stdout


def reformat(code: str, language: str, rng: random.Random) -> str:
    """`code` in a style drawn from `rng`, redrawn (up to a few times) while it equals the original."""
    language = language.lower()
    if language != "python" and language not in CLANG_LANGUAGES:
        raise ValueError(f"T1 formats python, java, c and cpp, not {language!r}")
    text = code
    for _ in range(_DRAWS):
        if language == "python":
            text = reformat_python(code, python_style(rng))
        else:
            text = reformat_clang(code, language, clang_style(rng))
        if text != code:
            break
    return text
