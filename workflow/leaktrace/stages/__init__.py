"""Stage entry points: each reads its inputs, calls library code, writes its
Parquet outputs. Only these modules know about files; ``cli`` dispatches to them."""
