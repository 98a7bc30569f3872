"""`python -m bert export-lesson NAME --model M --out FILE.html`: a lesson as a self-contained HTML handout;
`python -m bert export-lesson --list`: the built-in lessons, one per line."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from bert.errors import BertError

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="a built-in lesson (see --list) or a lesson file (.yaml)")
    parser.add_argument("--list", action="store_true", help="print the built-in lessons, one per line, and stop")
    parser.add_argument("--model", default="minilm", help="minilm, a Hugging Face folder, or a cached hub id")
    parser.add_argument("--out", type=Path, help="the HTML file to write (default: NAME.html)")
    parser.add_argument("--app-url", help="the app's address, e.g. http://classroom-pc:8501, to give each step its link")


def run(args: argparse.Namespace) -> int:
    from viz_app.lessons.format import builtin_lessons, load_lesson

    lessons = builtin_lessons()
    if args.list:
        for name, lesson in lessons.items():
            print(f"{name}\t{lesson.title} ({len(lesson.steps)} steps)")
        return 0
    if not args.name:
        raise BertError("name a lesson (python -m bert export-lesson --list shows the built-in ones) or a .yaml file")
    if args.name in lessons:
        lesson = lessons[args.name]
    elif Path(args.name).suffix in (".yaml", ".yml"):
        lesson = load_lesson(args.name)
    else:
        raise BertError(f"no built-in lesson {args.name!r}; choose one of {', '.join(lessons)}, or give a .yaml file")
    from viz_app import models
    from viz_app.lessons.export import lesson_html

    loaded = models.load(models.ModelKey.of(args.model))
    out = args.out or Path(f"{lesson.name}.html")
    try:
        out.write_text(lesson_html(lesson, loaded, args.model, args.app_url), encoding="utf-8")
    except OSError as error:
        raise BertError(f"cannot write {out}: {error.strerror or error}") from error
    logger.info("wrote %s: %s, %d steps, for %s", out, lesson.title, len(lesson.steps), args.model)
    return 0
