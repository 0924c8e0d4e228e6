"""Reports of a made-up shop: the corpus of leaktrace's audit example (nothing planted here)."""


def format_table(rows, columns):
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) if rows else len(c) for c in columns}
    header = " | ".join(c.ljust(widths[c]) for c in columns)
    rule = "-+-".join("-" * widths[c] for c in columns)
    body = [" | ".join(str(r[c]).ljust(widths[c]) for c in columns) for r in rows]
    return "\n".join([header, rule, *body])


def daily_totals(sales):
    totals = {}
    for day, amount in sales:
        totals[day] = totals.get(day, 0) + amount
    return dict(sorted(totals.items()))


def best_day(sales):
    totals = daily_totals(sales)
    if not totals:
        return None
    return max(totals, key=totals.get)
