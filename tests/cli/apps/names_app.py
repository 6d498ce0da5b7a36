"""Apps of the name tests.

``app``: automation ``a`` finds the keys ``b/c`` and ``b``, automation ``b`` finds ``c``; every
item stops in ``exception``, so ``a/b/c``, ``a/b`` and ``b/c`` each name exactly one item.
``slash``: an app whose automation is named ``a/b``, which construction refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Evidence, NeedsEyes


def _finds(*keys: str) -> Callable[[HookContext], Iterable[str]]:
    return lambda ctx: keys


def observe(ctx: HookContext) -> Evidence:
    assert ctx.item is not None
    return Evidence({"key": ctx.item.key})


def propose(ctx: HookContext) -> NeedsEyes:
    return NeedsEyes("a person looks at every item")


def automation(name: str, *keys: str) -> Automation:
    return Automation(
        name=name, discover=_finds(*keys), observe=observe, propose=propose, every=3600
    )


app = App([automation("a", "b/c", "b"), automation("b", "c")], actors={"carol": ("operator",)})


def slash() -> App:
    """``stopline run names_app.py:slash``: refused when the automation is built."""
    return App([automation("a/b", "c")])
