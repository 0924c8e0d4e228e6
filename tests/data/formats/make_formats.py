"""Writes the small benchmark files of tests/data/formats/: each in the
layout one public benchmark releases (field names, nesting, id forms, how
tests are written), holding problems written for leaktrace's tests, not
copied from the benchmarks. Sources of each layout: the comments of PRESETS
in workflow/leaktrace/data/benchmarks.py. Run from this directory:
``../../../.venv/bin/python make_formats.py``."""

import gzip
import json

GCD = "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n"


def jsonl(name, records, gz=False):
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    with open(name, "wb") as out:
        out.write(gzip.compress(data, mtime=0) if gz else data)


# HumanEval (openai/human-eval HumanEval.jsonl.gz)
jsonl("humaneval.jsonl.gz", [
    {"task_id": "HumanEval/0", "prompt": "def double(x: int) -> int:\n    \"\"\"Return twice x.\n    >>> double(2)\n    4\n    \"\"\"\n",
     "canonical_solution": "    return 2 * x\n", "entry_point": "double",
     "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-1) == -2\n"},
    {"task_id": "HumanEval/1", "prompt": "def last_word(text: str) -> str:\n    \"\"\"The last word of text, or ''.\"\"\"\n",
     "canonical_solution": "    words = text.split()\n    return words[-1] if words else ''\n", "entry_point": "last_word",
     "test": "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate('a b c') == 'c'\n    assert candidate('') == ''\n"},
], gz=True)

# MBPP (google-research/mbpp mbpp.jsonl): asserts in test_list, setup code in test_setup_code
jsonl("mbpp.jsonl", [
    {"task_id": 601, "text": "Write a function to find the greatest common divisor of two integers.", "code": GCD,
     "test_list": ["assert gcd(12, 18) == 6", "assert gcd(7, 5) == 1", "assert gcd(0, 4) == 4"],
     "test_setup_code": "", "challenge_test_list": []},
    {"task_id": 602, "text": "Write a function to compute the hypotenuse of a right triangle.",
     "code": "import math\ndef hypotenuse(a, b):\n    return math.sqrt(a * a + b * b)\n",
     "test_list": ["assert math.isclose(hypotenuse(3, 4), 5.0)", "assert hypotenuse(0, 0) == 0.0"],
     "test_setup_code": "import math", "challenge_test_list": []},
])

# MBPP sanitized (google-research/mbpp sanitized-mbpp.json: a JSON array; imports in test_imports)
with open("mbpp-sanitized.json", "w") as out:
    json.dump([
        {"source_file": "Benchmark Questions Verification V2.ipynb", "task_id": 603,
         "prompt": "Write a function to count the words of a sentence.",
         "code": "def count_words(sentence):\n    return len(sentence.split())\n",
         "test_imports": [], "test_list": ["assert count_words('a b  c') == 3", "assert count_words('') == 0"]},
        {"source_file": "Benchmark Questions Verification V2.ipynb", "task_id": 604,
         "prompt": "Write a function to return the sorted unique items of a list.",
         "code": "def sorted_unique(items):\n    return sorted(set(items))\n",
         "test_imports": ["import random"], "test_list": ["assert sorted_unique([3, 1, 3]) == [1, 3]",
                                                         "assert sorted_unique(random.sample(range(5), 5)) == [0, 1, 2, 3, 4]"]},
    ], out, indent=1)

# MBPP+ on the hub (evalplus/mbppplus): the plus tests as a script that calls the function by name
jsonl("mbppplus.jsonl", [
    {"task_id": 605, "code": "def clamp(x, low, high):\n    return max(low, min(high, x))\n",
     "prompt": "Write a function to clamp a number into a range.", "source_file": "Mbpp/605.py", "test_imports": [],
     "test_list": ["assert clamp(5, 0, 3) == 3"],
     "test": "import math\n\ndef assertion(out, exp, atol):\n    assert out == exp if atol == 0 else math.isclose(out, exp, abs_tol=atol)\n\n"
             "inputs = [[5, 0, 3], [-1, 0, 3], [2, 0, 3]]\nresults = [3, 0, 2]\n"
             "for i, (inp, exp) in enumerate(zip(inputs, results)):\n    assertion(clamp(*inp), exp, 0)\n"},
])

# MBPP+ as EvalPlus releases it (MbppPlus.jsonl)
jsonl("mbppplus-evalplus.jsonl", [
    {"task_id": "Mbpp/606", "prompt": "\"\"\"\nWrite a function to reverse the words of a sentence.\n"
     "assert reverse_words('a b') == 'b a'\n\"\"\"\n", "entry_point": "reverse_words",
     "canonical_solution": "\ndef reverse_words(sentence):\n    return ' '.join(reversed(sentence.split()))\n",
     "base_input": [["a b"], ["one"]], "plus_input": [[""], ["x y z"]], "atol": 0,
     "contract": "\n    assert isinstance(sentence, str), \"invalid inputs\" # $_CONTRACT_$\n",
     "assertion": "\nassert reverse_words('a b') == 'b a'\nassert reverse_words('one') == 'one'\n"},
    {"task_id": "Mbpp/607", "prompt": "\"\"\"\nWrite a function to compute the mean of a list of numbers.\n\"\"\"\n",
     "entry_point": "mean", "canonical_solution": "\ndef mean(values):\n    return sum(values) / len(values)\n",
     "base_input": [[[1, 2]]], "plus_input": [[[0.5]]], "atol": 1e-06,
     "contract": "\n    assert len(values) > 0 # $_CONTRACT_$\n",
     "assertion": "\nimport math\nassert math.isclose(mean([1, 2]), 1.5)\n"},
])

# CRUXEval (facebookresearch/cruxeval data/cruxeval.jsonl): a function f, its input and output as Python source
jsonl("cruxeval.jsonl", [
    {"code": "def f(text, n):\n    return text[n:] + text[:n]\n", "input": "'abcde', 2", "output": "'cdeab'", "id": "sample_0"},
    {"code": "def f(nums):\n    out = []\n    for x in nums:\n        if x % 2:\n            out.append(x * x)\n    return out\n",
     "input": "[1, 2, 3]", "output": "[1, 9]", "id": "sample_1"},
])

# APPS (codeparrot/apps): solutions and input_output as JSON strings; stdin/stdout and call-based problems
jsonl("apps.jsonl", [
    {"problem_id": 4000, "question": "Read two integers and print their sum.",
     "solutions": json.dumps(["a, b = map(int, input().split())\nprint(a + b)\n"]),
     "input_output": json.dumps({"inputs": ["1 2\n", "10 -3\n"], "outputs": ["3\n", "7\n"]}),
     "difficulty": "introductory", "url": "https://example.org/4000", "starter_code": ""},
    {"problem_id": 4001, "question": "Return the number of distinct letters of a word.",
     "solutions": json.dumps(["def distinct_letters(word):\n    return len(set(word))\n"]),
     "input_output": json.dumps({"fn_name": "distinct_letters", "inputs": [["abca"], [""]], "outputs": [[3], [0]]}),
     "difficulty": "introductory", "url": "https://example.org/4001", "starter_code": "def distinct_letters(word):\n"},
])

# ClassEval (FudanSELab/ClassEval ClassEval_data.json: a JSON array; unittest classes)
with open("classeval.json", "w") as out:
    json.dump([
        {"task_id": "ClassEval_900", "skeleton": "class Counter:\n    \"\"\"Counts events by name.\"\"\"\n\n"
         "    def __init__(self):\n        \"\"\"Start with no events.\"\"\"\n\n    def add(self, name):\n"
         "        \"\"\"Count one event; return its count so far.\"\"\"\n\n    def top(self):\n"
         "        \"\"\"The most frequent name, or None.\"\"\"\n",
         "test": "import unittest\n\n\nclass CounterTestAdd(unittest.TestCase):\n    def test_add(self):\n"
                 "        c = Counter()\n        c.add('a')\n        self.assertEqual(c.add('a'), 2)\n\n\n"
                 "class CounterTestTop(unittest.TestCase):\n    def test_top(self):\n        c = Counter()\n"
                 "        for name in ['a', 'b', 'b']:\n            c.add(name)\n        self.assertEqual(c.top(), 'b')\n"
                 "        self.assertEqual(c.counts, {'a': 1, 'b': 2})\n\n    def test_empty(self):\n"
                 "        self.assertIsNone(Counter().top())\n",
         "solution_code": "class Counter:\n    def __init__(self):\n        self.counts = {}\n\n    def add(self, name):\n"
                          "        self.counts[name] = self.counts.get(name, 0) + 1\n        return self.counts[name]\n\n"
                          "    def top(self):\n        if not self.counts:\n            return None\n"
                          "        return max(self.counts, key=self.counts.get)\n",
         "import_statement": [], "class_description": "class Counter:\n    \"\"\"Counts events by name.\"\"\"\n",
         "methods_info": [], "class_name": "Counter", "test_classes": ["CounterTestAdd", "CounterTestTop"],
         "class_constructor": "class Counter:\n    def __init__(self):\n        self.counts = {}\n",
         "fields": ["self.counts"]},
    ], out, indent=1)

# HumanEval-X (THUDM/CodeGeeX humaneval_<lang>.jsonl.gz): the language is the task_id's prefix
jsonl("humaneval-x.jsonl.gz", [
    {"task_id": "CPP/0", "prompt": "/*\nReturn the larger of a and b.\n*/\n#include<stdio.h>\nint larger(int a, int b){\n",
     "declaration": "#include<stdio.h>\nint larger(int a, int b){\n", "canonical_solution": "    return a > b ? a : b;\n}\n",
     "test": "#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (larger(1, 2) == 2);\n}\n", "example_test": ""},
    {"task_id": "Java/0", "prompt": "import java.util.*;\n\nclass Solution {\n    /** Return the larger of a and b. */\n"
     "    public int larger(int a, int b) {\n", "declaration": "class Solution {\n    public int larger(int a, int b) {\n",
     "canonical_solution": "        return Math.max(a, b);\n    }\n}\n",
     "test": "public class Main {\n    public static void main(String[] args) {\n        Solution s = new Solution();\n"
             "        if (s.larger(1, 2) != 2) throw new AssertionError();\n    }\n}\n", "example_test": ""},
], gz=True)

# DS-1000 (xlang-ai/DS-1000 data/ds1000.jsonl.gz): code_context execs the solution's source
jsonl("ds1000.jsonl.gz", [
    {"prompt": "Problem:\nI have a list of numbers and want their running total.\nA:\n<code>\nimport itertools\n"
               "numbers = [1, 2, 3]\n</code>\nresult = ... # put solution in this variable\nBEGIN SOLUTION\n<code>\n",
     "reference_code": "result = list(itertools.accumulate(numbers))\n",
     "metadata": {"problem_id": 900, "library_problem_id": 0, "library": "Python", "test_case_cnt": 1,
                  "perturbation_type": "Origin", "perturbation_origin_id": 900},
     "code_context": "import itertools\n\ndef generate_test_case(test_case_id):\n    return [1, 2, 3], [1, 3, 6]\n\n"
                     "def exec_test(result, ans):\n    assert result == ans\n    return 1\n\n"
                     "exec_context = r\"\"\"\nimport itertools\nnumbers = test_input\n[insert]\n\"\"\"\n\n"
                     "def test_execution(solution: str):\n    code = exec_context.replace(\"[insert]\", solution)\n"
                     "    test_input, expected_result = generate_test_case(1)\n    test_env = {\"test_input\": test_input}\n"
                     "    exec(code, test_env)\n    assert exec_test(test_env[\"result\"], expected_result)\n"},
], gz=True)

# SWE-bench (princeton-nlp/SWE-bench): issues, text only
jsonl("swe-bench.jsonl", [
    {"repo": "example/shop", "instance_id": "example__shop-1", "base_commit": "0" * 40,
     "patch": "diff --git a/shop/cart.py b/shop/cart.py\n", "test_patch": "diff --git a/tests/test_cart.py b/tests/test_cart.py\n",
     "problem_statement": "Removing the last item of a cart raises KeyError instead of leaving an empty cart.",
     "hints_text": "", "created_at": "2026-01-01T00:00:00Z", "version": "1.0",
     "FAIL_TO_PASS": "[\"tests/test_cart.py::test_remove_last\"]", "PASS_TO_PASS": "[]",
     "environment_setup_commit": "0" * 40},
])

# HumanEval+ (the Hugging Face card of evalplus/humanevalplus): HumanEval's five fields, more tests
jsonl("humanevalplus.jsonl", [
    {"task_id": "HumanEval/0", "prompt": "def triple(x: int) -> int:\n    \"\"\"Return three times x.\"\"\"\n",
     "canonical_solution": "    return 3 * x\n", "entry_point": "triple",
     "test": "def check(candidate):\n    for x in range(-50, 50):\n        assert candidate(x) == 3 * x\n"},
    {"task_id": "HumanEval/1", "prompt": "def first_char(text: str) -> str:\n    \"\"\"The first character of text, or ''.\"\"\"\n",
     "canonical_solution": "    return text[:1]\n", "entry_point": "first_char",
     "test": "def check(candidate):\n    assert candidate('abc') == 'a'\n    assert candidate('') == ''\n"},
])

# CodeSearchNet on the hub (code_search_net): one record with its func_code_url, one from a dump without it
CSN_FUNC = "def add_tax(price, rate=0.2):\n    \"\"\"Price with tax added.\"\"\"\n    return price * (1 + rate)\n"
jsonl("codesearchnet.jsonl", [
    {"repository_name": "example/shop", "func_path_in_repository": "shop/tax.py", "func_name": "add_tax",
     "whole_func_string": CSN_FUNC, "language": "python", "func_code_string": CSN_FUNC,
     "func_code_tokens": ["def", "add_tax"], "func_documentation_string": "Price with tax added.",
     "func_documentation_tokens": ["Price", "with", "tax", "added", "."], "split_name": "test",
     "func_code_url": "https://github.com/example/shop/blob/0000000/shop/tax.py#L1-L3"},
    {"repository_name": "example/shop", "func_path_in_repository": "shop/cart.py", "func_name": "Cart.total",
     "whole_func_string": "def total(self):\n    return sum(self.items)\n", "language": "python",
     "func_code_string": "def total(self):\n    return sum(self.items)\n", "func_code_tokens": ["def", "total"],
     "func_documentation_string": "", "func_documentation_tokens": [], "split_name": "test"},
])

# CodeSearchNet's original release (github/CodeSearchNet, <language>/final/jsonl/<split>/*.jsonl.gz); the last two
# come from a dump without url, two overloads of one Java method
JAVA_ADD = "public int add(int a, int b) {\n    return a + b;\n}"
jsonl("codesearchnet-original.jsonl.gz", [
    {"repo": "example/calc", "path": "src/Calc.java", "func_name": "Calc.square",
     "original_string": "public int square(int x) {\n    return x * x;\n}", "language": "java",
     "code": "public int square(int x) {\n    return x * x;\n}", "code_tokens": ["public", "int", "square"],
     "docstring": "Square of x.", "docstring_tokens": ["Square", "of", "x", "."], "sha": "0" * 40,
     "url": "https://github.com/example/calc/blob/0000000/src/Calc.java#L3-L5", "partition": "test"},
    {"repo": "example/calc", "path": "src/Calc.java", "func_name": "Calc.add", "original_string": JAVA_ADD,
     "language": "java", "code": JAVA_ADD, "code_tokens": ["public", "int", "add"], "docstring": "Sum of two ints.",
     "docstring_tokens": ["Sum"], "sha": "0" * 40, "partition": "test"},
    {"repo": "example/calc", "path": "src/Calc.java", "func_name": "Calc.add",
     "original_string": JAVA_ADD.replace("int", "long"), "language": "java", "code": JAVA_ADD.replace("int", "long"),
     "code_tokens": ["public", "long", "add"], "docstring": "Sum of two longs.", "docstring_tokens": ["Sum"],
     "sha": "0" * 40, "partition": "test"},
], gz=True)

# Text only (any records with an id and a text field)
jsonl("text.jsonl", [{"id": "note-1", "text": "A note about sorting."}, {"id": "note-2", "text": "Another about search."}])
