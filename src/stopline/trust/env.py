"""The names of signed mode that the command line's parser shows (environment variables, key
purposes), in a module that imports nothing: ``stopline --help`` need not load the
cryptography they configure."""

from __future__ import annotations

TRUST_ROOT_ENV = "STOPLINE_TRUST_ROOT"  # the host's trust root: set means signed mode
KEY_ENV = "STOPLINE_KEY"  # the key a person's command is signed with

SIGN = "sign"
SPEAK_FOR = "speak_for"
CHECKPOINT_PURPOSE = "checkpoint"
PURPOSES = (SIGN, SPEAK_FOR, CHECKPOINT_PURPOSE)
