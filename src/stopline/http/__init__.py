"""The HTTP shell: a JSON API, the web inbox, metrics and webhooks over the controller.

Installed with the ``server`` extra. :func:`stopline.http.app.create_app` builds the ASGI
application; :func:`stopline.http.server.serve` runs it (``stopline serve``).
"""
