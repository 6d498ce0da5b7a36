"""The web inbox: server-rendered pages (Jinja2, autoescaped) over the same command layer."""
