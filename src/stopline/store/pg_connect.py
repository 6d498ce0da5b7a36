"""How long a PostgreSQL connection waits for a server that vanished without a word.

A server host powered off, or a network cut between it and a worker, sends nothing: no reset,
no error. A connection waiting for its answer would wait for good (a request the server never
acknowledged is given up by the kernel after about a quarter of an hour; an answer lost after
the request was acknowledged, never), holding its worker while the lease of what it held runs
out. Every connection the store opens asks the kernel to give up sooner: TCP keepalives probe
a connection silent for 30 s, three times 10 s apart, and data unacknowledged for 30 s ends it
(``tcp_user_timeout``). The call then fails as a connection error, and the worker's reconnect
rules take over. These are libpq's own settings; one given in the database URL wins. They do
not apply to a Unix socket, which has no network in between.
"""

from __future__ import annotations

from typing import Any

from psycopg.conninfo import conninfo_to_dict

TCP_DEFAULTS: dict[str, str] = {
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",  # milliseconds
}


def tcp_settings(url: str) -> dict[str, Any]:
    """The settings of :data:`TCP_DEFAULTS` that ``url`` does not give itself."""
    given = conninfo_to_dict(url)
    return {name: value for name, value in TCP_DEFAULTS.items() if name not in given}
