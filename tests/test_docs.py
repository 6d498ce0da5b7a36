"""The documentation: generated references in step with the code, every name documented, and
links that stay inside the repository and resolve."""

from __future__ import annotations

import re
from pathlib import Path

from stopline.cli import docgen

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_cli_and_http_references_are_generated_from_the_code() -> None:
    """docs/cli.md and docs/http.md are exactly what `python -m stopline.cli.docgen` writes."""
    assert docgen.stale() == [], "run: python -m stopline.cli.docgen"


def test_every_environment_variable_in_the_source_is_documented() -> None:
    """Each STOPLINE_* name the source reads is in docs/cli.md's table, and no other."""
    used = set()
    for path in (ROOT / "src").rglob("*.py"):
        used |= set(re.findall(r"STOPLINE_[A-Z_]+[A-Z]", path.read_text()))
    documented = {name for name, _, _ in docgen.ENVIRONMENT}
    assert used == documented


def _anchors(path: Path) -> set[str]:
    out = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return out


def test_links_stay_inside_the_repository_and_resolve() -> None:
    """No document links outside the repository; every relative link names a file that exists
    (and a heading that exists, when it names one)."""
    problems = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
                continue
            if target.startswith("#"):
                path, anchor = doc, target[1:]
            else:
                name, _, anchor = target.partition("#")
                path = (doc.parent / name).resolve()
            if not path.is_relative_to(ROOT):
                problems.append(f"{doc.name}: {target} is outside the repository")
            elif not path.exists():
                problems.append(f"{doc.name}: {target} does not exist")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                problems.append(f"{doc.name}: {target} names no heading")
    assert not problems, problems


def test_no_file_refers_to_a_contract_outside_the_repository() -> None:
    """No document or source file names the contract file that is not in the repository."""
    files = [*DOCS, *(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    named = [str(p.relative_to(ROOT)) for p in files if "CONTRACT" + ".md" in p.read_text()]
    assert named == []
