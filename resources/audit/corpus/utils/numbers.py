"""Number helpers of a made-up project: the corpus of leaktrace's audit example.

sum_of_digits is benchmark problem 6 of resources/audit/mbpp-audit.jsonl
(digit_sum) with every name renamed, planted on purpose.
"""


def clamp(value, low, high):
    return max(low, min(high, value))


def sum_of_digits(n):
    acc = 0
    while n:
        n, d = divmod(n, 10)
        acc += d
    return acc


def mean(values):
    values = list(values)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def to_base(number, base):
    if number == 0:
        return "0"
    digits = []
    while number:
        number, rest = divmod(number, base)
        digits.append("0123456789abcdef"[rest])
    return "".join(reversed(digits))
