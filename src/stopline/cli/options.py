"""The parts of the command line's parser that several commands share, and commands that are
imported only when they run: building the parser (``stopline --help``, a mistyped flag) loads no
controller, store, runtime or cryptography."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from ..trust.env import KEY_ENV

CHECKPOINT_ENV = "STOPLINE_CHECKPOINT"

Command = Callable[[argparse.Namespace, Any, Any], int]


def lazy(module: str, name: str) -> Command:
    """The command function ``name`` of ``stopline.cli.MODULE``, imported when it runs."""

    def run(args: argparse.Namespace, store: Any, out: Any) -> int:
        fn: Command = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return fn(args, store, out)

    run.__qualname__ = run.__name__ = name
    return run


def add_key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key",
        metavar="PATH",
        help=(
            f"sign with this key (env {KEY_ENV}): a private key file, or a public key whose "
            "private half is in ssh-agent; without it ssh-agent is asked for the actor's "
            "certified key. Used only in signed mode"
        ),
    )


def add_since_option(parser: argparse.ArgumentParser, env: bool = False) -> None:
    parser.add_argument(
        "--since",
        metavar="CHECKPOINT",
        help="also check the database against this checkpoint file"
        + (f" (env {CHECKPOINT_ENV})" if env else ""),
    )


def add_checkpoint_command(add: Any) -> None:
    p = add(
        "checkpoint",
        lazy("checkpoint", "cmd_checkpoint"),
        "write a signed checkpoint of every chain head (keep it where the database's writers "
        "cannot write)",
    )
    p.add_argument(
        "--key",
        metavar="PATH",
        help="a root key or a key certified for checkpoint (env STOPLINE_KEY); a public key "
        "whose private half is in ssh-agent works too",
    )
    p.add_argument("--out", metavar="FILE", help="write it to FILE (never overwritten)")
    p.add_argument(
        "--webhook",
        metavar="URL",
        help="POST it to URL as application/json (a 2xx answer only; a redirect is not followed)",
    )
