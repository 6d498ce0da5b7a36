"""The README's automation example works as the README says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
CLI = [sys.executable, "-m", "stopline.cli.main"]


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return next(b for b in blocks if "app = App(" in b)


def stopline(tmp: Path, *args: str) -> dict:  # type: ignore[type-arg]
    out = subprocess.run(
        [*CLI, *args, "--db", f"sqlite:///{tmp / 'stopline.db'}", "--json"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_readme_example_stops_where_it_says_and_completes_after_approval(tmp_path: Path) -> None:
    """The README example leaves items at three stop-lines; an approval lets one complete."""
    (tmp_path / "refunds.py").write_text(example())
    stopline(tmp_path, "run", "refunds.py:app", "--once", "--linger", "0")
    states = {i["key"]: i["state"] for i in stopline(tmp_path, "items")["items"]}
    assert states == {
        "INC-1041": "awaiting_approval",
        "INC-1042": "ready_for_review",
        "INC-1043": "exception",
    }
    digest = stopline(tmp_path, "show", "refunds/INC-1041")["proposal"]["digest"]
    decision = stopline(
        tmp_path, "approve", "refunds/INC-1041", "--proposal", digest, "--actor", "alice"
    )
    assert decision["decision"] == "applied" and decision["state"] == "approved"
    stopline(tmp_path, "run", "refunds.py:app", "--once", "--linger", "0")
    item = stopline(tmp_path, "show", "refunds/INC-1041")
    assert item["state"] == "completed"
    [artifact] = item["artifacts"]
    assert artifact["readback_hash"] == artifact["content_hash"]
    assert any((tmp_path / "drafts").rglob("object.md"))
