"""The JSON API over the command layer: ``/api/...`` (one route per table entry), the OpenAPI
document and ``/metrics``. Assembled with the web inbox by :mod:`stopline.server.app`."""
