"""The command layer: every command a person gives, declared once in :mod:`.table`, and the
one path each takes to ``decide()`` whichever shell received it."""
