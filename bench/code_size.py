"""Lines of Python per folder (viz_app, pages, bert, tests) and the largest functions (viz_app, pages, bert) of one
or more checkouts, as Markdown tables.

    python -m bench.code_size .                 # this checkout
    python -m bench.code_size /tmp/base . --top 10
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

FOLDERS = ("viz_app", "pages", "bert", "tests")


def lines_per_folder(root: Path) -> dict[str, int]:
    return {folder: sum(len(path.read_text().splitlines()) for path in (root / folder).rglob("*.py"))
            for folder in FOLDERS}


def largest_functions(root: Path, top: int) -> list[tuple[int, str]]:
    sizes = []
    for folder in ("viz_app", "pages", "bert"):
        for path in (root / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    sizes.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(root)}:{node.name}"))
    return sorted(sizes, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    for root in args.checkouts:
        print(f"## {root.resolve()}\n")
        print("| folder | lines |\n| --- | ---: |")
        for folder, lines in lines_per_folder(root).items():
            print(f"| {folder}/ | {lines:,} |")
        print(f"\n| the {args.top} largest functions | lines |\n| --- | ---: |")
        for lines, name in largest_functions(root, args.top):
            print(f"| `{name}` | {lines} |")
        print()


if __name__ == "__main__":
    main()
