"""The pgtasks dashboard (``pgtasks dashboard``, the ``pgtasks[dashboard]`` extra): web pages,
Flower's REST API and Prometheus ``/metrics``, reading and acting only through the management
API. Importing it needs Starlette, Jinja2, uvicorn and prometheus-client."""
