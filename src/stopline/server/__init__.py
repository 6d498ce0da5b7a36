"""The server both shells run in (``stopline serve``): its settings, what every request
handler shares, who may call what, the server's signing key, the body limit, and the
assembly of the JSON API (:mod:`stopline.http`) and the web inbox (:mod:`stopline.web`).

Installed with the ``server`` extra. :func:`stopline.server.app.create_app` builds the ASGI
application; :func:`stopline.server.run.serve` runs it. Only ``app`` and ``run`` import the
shells; the shells import only the shared modules, never each other.
"""
