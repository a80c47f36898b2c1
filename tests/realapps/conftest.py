"""The projects under tests/realapps are run by the tests here, each in a venv of its own;
their own test files are not part of this suite."""

collect_ignore_glob = ["django_shop/*", "fastapi_shop/*", "libs_project/*", "cookiecutter_shop/*"]
