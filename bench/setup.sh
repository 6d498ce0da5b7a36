#!/usr/bin/env bash
# Create bench/.venv with stopline (editable, [postgres,server]) and the pinned peers.
# Idempotent: re-running reuses the venv and only installs what is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi

"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e "$repo[postgres,server,lockstep]"
"$venv/bin/python" -m pip install --quiet -r "$here/requirements-peers.txt"

"$venv/bin/python" - <<'PY'
from importlib.metadata import version

for name in ("stopline", "psycopg", "procrastinate", "pgqueuer", "asyncpg", "dbos"):
    print(f"{name}=={version(name)}")
PY
