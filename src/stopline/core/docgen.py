"""Write ``docs/states.md`` from the transition table.

``python -m stopline.core.docgen`` (re)writes the file; ``--check`` writes nothing and exits 1
when the file is missing or differs from what the table generates (0 when it is up to date).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .transitions import markdown

# src/stopline/core/docgen.py -> the repository root is three folders up from this package.
DEFAULT_PATH = Path(__file__).resolve().parents[3] / "docs" / "states.md"


def render() -> str:
    """The exact text ``docs/states.md`` must hold."""
    return markdown()


def is_current(path: Path = DEFAULT_PATH) -> bool:
    """``True`` when ``path`` holds exactly what the table generates."""
    try:
        return path.read_text(encoding="utf-8") == render()
    except FileNotFoundError:
        return False


def write(path: Path = DEFAULT_PATH) -> bool:
    """Write the file; ``True`` when its content changed."""
    if is_current(path):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # newline="\n": the same bytes on every platform, so ``--check`` agrees everywhere.
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(render())
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stopline.core.docgen",
        description="Generate docs/states.md from stopline.core.transitions.",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file is not up to date; write nothing"
    )
    parser.add_argument(
        "--path", type=Path, default=DEFAULT_PATH, help=f"the file (default: {DEFAULT_PATH})"
    )
    args = parser.parse_args(argv)
    path: Path = args.path
    if args.check:
        if is_current(path):
            return 0
        print(
            f"{path} is out of date; run: python -m stopline.core.docgen",
            file=sys.stderr,
        )
        return 1
    changed = write(path)
    print(f"{'wrote' if changed else 'unchanged'} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
