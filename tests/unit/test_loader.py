"""load_app: finding the App named by ``-A`` the way Celery does."""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks.app import App
from pgtasks.cli.loader import load_app
from pgtasks.engine.errors import ConfigurationError

_counter = itertools.count()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path; modules imported from it are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def unique(prefix: str) -> str:
    return f"{prefix}_{next(_counter)}_{id(_counter)}"


def write(path: Path, body: str, db: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"import pgtasks\nDB = {('sqlite:///' + str(db))!r}\n"
    path.write_text(header + textwrap.dedent(body))


def module(workdir: Path, body: str) -> str:
    name = unique("ldmod")
    write(workdir / f"{name}.py", body, workdir / "db.sqlite3")
    return name


def test_module_colon_attr(workdir: Path) -> None:
    name = module(
        workdir,
        'first = pgtasks.App("first", database_url=DB)\nsecond = pgtasks.App("second", database_url=DB)\n',
    )
    app = load_app(f"{name}:second")
    assert isinstance(app, App)
    assert app.main == "second"


def test_module_colon_factory_is_called(workdir: Path) -> None:
    name = module(workdir, 'def make():\n    return pgtasks.App("made", database_url=DB)\n')
    assert load_app(f"{name}:make").main == "made"


def test_module_colon_missing_attr(workdir: Path) -> None:
    name = module(workdir, 'app = pgtasks.App("a", database_url=DB)\n')
    with pytest.raises(ConfigurationError, match="has no attribute 'nope'"):
        load_app(f"{name}:nope")


def test_module_colon_attr_not_an_app(workdir: Path) -> None:
    name = module(workdir, "value = 42\n")
    with pytest.raises(ConfigurationError, match="int is not a pgtasks App"):
        load_app(f"{name}:value")


def test_module_with_app_attribute(workdir: Path) -> None:
    name = module(
        workdir, 'other = pgtasks.App("other", database_url=DB)\napp = pgtasks.App("main", database_url=DB)\n'
    )
    assert load_app(name).main == "main"


def test_module_with_celery_attribute(workdir: Path) -> None:
    name = module(
        workdir,
        'other = pgtasks.App("other", database_url=DB)\ncelery = pgtasks.App("cel", database_url=DB)\n',
    )
    assert load_app(name).main == "cel"


def test_package_with_celery_submodule(workdir: Path) -> None:
    name = unique("ldpkg")
    (workdir / name).mkdir()
    (workdir / name / "__init__.py").write_text("")
    write(
        workdir / name / "celery.py",
        'app = pgtasks.App("from_sub", database_url=DB)\n',
        workdir / "db.sqlite3",
    )
    app = load_app(name)
    assert app.main == "from_sub"
    assert app is sys.modules[f"{name}.celery"].app


def test_package_with_an_app_of_another_name_in_its_celery_submodule(workdir: Path) -> None:
    """Celery's find_app: ``pkg.celery``'s app, whatever its name (``myapp``)."""
    name = unique("ldpkgnamed")
    (workdir / name).mkdir()
    (workdir / name / "__init__.py").write_text("")
    write(
        workdir / name / "celery.py",
        'import os\nmyapp = pgtasks.App("named_in_sub", database_url=DB)\n',
        workdir / "db.sqlite3",
    )
    assert load_app(name) is sys.modules[f"{name}.celery"].myapp


def test_a_celery_module_without_an_app_says_no_celery_app(workdir: Path) -> None:
    name = unique("ldcelerypkg")
    (workdir / name).mkdir()
    (workdir / name / "__init__.py").write_text("")
    (workdir / name / "celery.py").write_text("from celery import shared_task\n")
    with pytest.raises(ConfigurationError) as info:
        load_app(name)
    assert str(info.value) == (
        f"-A {name}: Unable to load celery application: module '{name}' defines no Celery app "
        f"(looked for 'app', 'celery', the module '{name}.celery' and any Celery instance); "
        f"name it as -A {name}:ATTRIBUTE"
    )


def test_single_app_under_another_name(workdir: Path) -> None:
    name = module(workdir, 'my_application = pgtasks.App("only", database_url=DB)\nx = 1\n')
    assert load_app(name).main == "only"


def test_no_app_is_refused(workdir: Path) -> None:
    name = module(workdir, "x = 1\n")
    with pytest.raises(ConfigurationError, match=f"module '{name}' defines no pgtasks App"):
        load_app(name)


def test_two_apps_are_refused(workdir: Path) -> None:
    name = module(
        workdir, 'one = pgtasks.App("1", database_url=DB)\ntwo = pgtasks.App("2", database_url=DB)\n'
    )
    with pytest.raises(ConfigurationError, match="has 2 Apps; name one as module:attr"):
        load_app(name)


def test_missing_module_is_refused(workdir: Path) -> None:
    name = unique("ldmissing")
    with pytest.raises(ConfigurationError, match=f"no module named '{name}'"):
        load_app(name)


def test_missing_dependency_is_not_hidden(workdir: Path) -> None:
    dep = unique("zz_absent_dependency")
    name = module(workdir, f"import {dep}\n")
    with pytest.raises(ConfigurationError) as info:
        load_app(name)
    # the missing dependency is named, not the app module (which exists)
    assert f"importing '{name}' raised ModuleNotFoundError: No module named '{dep}'" in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError) and info.value.__cause__.name == dep


def test_current_folder_is_importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path) -> None:
    here = tmp_path / "cwd"
    here.mkdir()
    name = unique("ldcwd")
    write(here / f"{name}.py", 'app = pgtasks.App("cwd", database_url=DB)\n', here / "db.sqlite3")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(here))])
    monkeypatch.chdir(here)
    assert load_app(name).main == "cwd"


def test_creating_the_app_does_not_create_the_database(workdir: Path) -> None:
    name = module(workdir, 'app = pgtasks.App("a", database_url=DB)\n')
    load_app(name)
    assert not (workdir / "db.sqlite3").exists()


def test_missing_dependency_whose_name_prefixes_the_module_is_not_hidden(workdir: Path) -> None:
    dep = unique("ldprefix")
    name = dep + "_tasks"
    write(workdir / f"{name}.py", f"import {dep}\n", workdir / "db.sqlite3")
    with pytest.raises(ConfigurationError) as info:
        load_app(name)
    assert f"importing '{name}' raised ModuleNotFoundError: No module named '{dep}'" in str(info.value)


def test_a_module_that_raises_at_import_is_one_clear_error(workdir: Path) -> None:
    name = module(workdir, "raise KeyError('no SECRET_KEY')\n")
    with pytest.raises(ConfigurationError) as info:
        load_app(name)
    assert str(info.value) == (
        f"-A {name}: Unable to load celery application: importing {name!r} raised KeyError: "
        f"'no SECRET_KEY' (at {workdir / (name + '.py')}:3)"  # after the two lines of write()
    )


def test_module_dot_attribute_forms_as_celery_reads_them(workdir: Path) -> None:
    # `-A main.celery`: the attribute `celery` of module `main` (FastAPI projects)
    name = module(workdir, 'celery = pgtasks.App("main_app", database_url=DB)\n')
    assert load_app(f"{name}.celery").main == "main_app"
    # `-A config.celery_app.app`: module path plus attribute (cookiecutter-django)
    package = unique("ldconfig")
    write(workdir / package / "__init__.py", "", workdir / "db.sqlite3")
    write(
        workdir / package / "celery_app.py",
        'app = pgtasks.App("cookie", database_url=DB)\n',
        workdir / "db.sqlite3",
    )
    assert load_app(f"{package}.celery_app.app").main == "cookie"
    assert load_app(f"{package}.celery_app").main == "cookie"
    with pytest.raises(
        ConfigurationError, match=r"Unable to load celery application.*has no attribute 'nope'"
    ):
        load_app(f"{package}.celery_app.nope")


def test_an_app_behind_the_current_app_proxy(workdir: Path) -> None:
    name = module(
        workdir,
        """
        from pgtasks.compat import Celery
        from pgtasks.compat.celery import current_app
        app_instance = Celery("proxied", broker=DB)
        app_instance.set_current()
        app = current_app
        """,
    )
    found = load_app(name + ":app")
    assert isinstance(found, App) and found.main == "proxied"
    assert load_app(name).main == "proxied"
