"""A lesson as one self-contained HTML handout, from the command line:

    python -m viz_app.export.lesson where_each_word_looks --model minilm --out handout.html
    python -m viz_app.export.lesson my_lesson.yaml --model bert-base-uncased --app-url http://classroom-pc:8501
    python -m viz_app.export.lesson --list        # the built-in lessons, one per line

Bad input (an unknown lesson, a bad lesson file, an unwritable --out) is one line on stderr and exit status 2."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from bert.errors import BertError
from viz_app.app import models
from viz_app.lessons.export import lesson_html
from viz_app.lessons.format import builtin_lessons, load_lesson
from bert.cli_arguments import add_model_argument

logger = logging.getLogger(__name__)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m viz_app.export.lesson", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", help="a built-in lesson (see --list) or a lesson file (.yaml)")
    parser.add_argument("--list", action="store_true", help="print the built-in lessons, one per line, and stop")
    add_model_argument(parser)
    parser.add_argument("--out", type=Path, help="the HTML file to write (default: NAME.html)")
    parser.add_argument("--app-url", help="the app's address, e.g. http://classroom-pc:8501, to give each step its link")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        return export(args)
    except BertError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def export(args: argparse.Namespace) -> int:
    lessons = builtin_lessons()
    if args.list:
        for name, lesson in lessons.items():
            print(f"{name}\t{lesson.title} ({len(lesson.steps)} steps)")
        return 0
    if not args.name:
        raise BertError("name a lesson (python -m viz_app.export.lesson --list shows the built-in ones) or a .yaml file")
    if args.name in lessons:
        lesson = lessons[args.name]
    elif Path(args.name).suffix in (".yaml", ".yml"):
        lesson = load_lesson(args.name)
    else:
        raise BertError(f"no built-in lesson {args.name!r}; choose one of {', '.join(lessons)}, or give a .yaml file")
    loaded = models.load(models.ModelKey.of(args.model))
    out = args.out or Path(f"{lesson.name}.html")
    try:
        out.write_text(lesson_html(lesson, loaded, args.model, args.app_url), encoding="utf-8")
    except OSError as error:
        raise BertError(f"cannot write {out}: {error.strerror or error}") from error
    logger.info("wrote %s: %s, %d steps, for %s", out, lesson.title, len(lesson.steps), args.model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
