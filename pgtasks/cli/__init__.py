"""The ``pgtasks`` command line."""
