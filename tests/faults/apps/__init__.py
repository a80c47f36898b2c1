"""Applications run by the worker subprocesses of the fault tests."""
