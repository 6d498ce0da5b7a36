"""Shell completion scripts for bash, zsh and fish, generated from the parser."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from stopline.cli.completion import SHELLS, commands
from stopline.cli.main import build_parser

CLI = [sys.executable, "-m", "stopline.cli.main"]


def subcommands() -> list[str]:
    return [c.name for c in commands(build_parser()) if " " not in c.name]


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_is_printed_and_names_every_subcommand(shell: str) -> None:
    """`stopline completion SHELL` exits 0 and its script names every subcommand and the
    choices of --verdict."""
    done = subprocess.run([*CLI, "completion", shell], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    names = subcommands()
    assert {"approve", "check", "run", "show", "completion", "actors"} <= set(names)
    missing = [name for name in names if name not in done.stdout]
    assert not missing, missing
    assert (
        "--proposal" in done.stdout or "-l proposal" in done.stdout
    ) and "approve reject" in done.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_parses_in_its_shell(shell: str) -> None:
    """The script is valid syntax for its shell (checked where the shell is installed)."""
    program = shutil.which(shell)
    if program is None:
        pytest.skip(f"{shell} is not installed")
    script = subprocess.run(
        [*CLI, "completion", shell], capture_output=True, text=True, timeout=60
    ).stdout
    done = subprocess.run([program, "-n"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_bash_completes_a_subcommand_and_its_flags() -> None:
    """Sourced in bash, the function offers `approve` for `ap` and `--proposal` after it."""
    script = subprocess.run(
        [*CLI, "completion", "bash"], capture_output=True, text=True, timeout=60
    ).stdout
    probe = script + (
        '\nCOMP_WORDS=(stopline ap); COMP_CWORD=1; _stopline; echo "${COMPREPLY[@]}"'
        '\nCOMP_WORDS=(stopline approve --pro); COMP_CWORD=2; _stopline; echo "${COMPREPLY[@]}"'
        '\nCOMP_WORDS=(stopline review x --verdict ""); COMP_CWORD=4; _stopline;'
        ' echo "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["approve", "--proposal", "approve reject"], done.stderr
