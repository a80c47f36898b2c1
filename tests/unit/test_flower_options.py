"""Flower's command line as `pgtasks flower` reads it: `--name=value`, FLOWER_* variables and
flowerconfig.py, the command line winning over the file and the file over the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.cli.flower_command import flower_main, parse_flower_options
from pgtasks.cli.main import _parser, main
from pgtasks.engine.errors import ConfigurationError


def test_command_line_over_config_file_over_environment(tmp_path: Path) -> None:
    config = tmp_path / "flowerconfig.py"
    config.write_text("port = 5702\nbasic_auth = ['c:d']\nunrelated = 1\n")
    env = {"FLOWER_PORT": "5701", "FLOWER_URL_PREFIX": "flower", "FLOWER_BOGUS": "x"}
    options = parse_flower_options([f"--conf={config}", "--basic-auth=a:b,x:y", "--read_only"], env)
    assert options["port"] == 5702 and options["url_prefix"] == "flower"
    assert options["basic_auth"] == ["a:b", "x:y"] and options["read_only"] is True
    assert "unrelated" not in options and "bogus" not in options
    assert parse_flower_options(["--port=5703", f"--conf={config}"], env)["port"] == 5703


def test_flower_spellings_and_their_errors(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigurationError, match="Option 'port' requires a value"):
        parse_flower_options(["--port", "5555"], {})
    with pytest.raises(ConfigurationError, match="--port: invalid literal"):
        parse_flower_options(["--port=abc"], {})
    with pytest.raises(ConfigurationError, match="no such file"):
        parse_flower_options(["--conf=/nonexistent/flowerconfig.py"], {})
    options = parse_flower_options(["--persistent=True", "--bogus_option=1"], {})
    assert "persistent" in options and "bogus_option" not in options
    assert (
        "persistent accepted and ignored" in caplog.text
        and "--bogus_option is not one of Flower's" in caplog.text
    )


def test_flowers_options_are_what_the_parser_leaves_after_the_flower_command() -> None:
    parser = _parser()
    args, unknown = parser.parse_known_args(["-A", "proj", "flower", "--port=1", "--basic_auth=u:p"])
    assert args.app == "proj" and args.func is flower_main and unknown == ["--port=1", "--basic_auth=u:p"]
    args, unknown = parser.parse_known_args(["flower", "--port=1", "-A", "proj"])  # -A after, as Celery
    assert args.app == "proj" and unknown == ["--port=1"]
    args, unknown = parser.parse_known_args(["flower", "--conf=flowerconfig.py"])  # not Celery's --config
    assert unknown == ["--conf=flowerconfig.py"]
    args, _ = parser.parse_known_args(["-A", "flower", "worker"])  # an app named flower
    assert args.app == "flower" and args.func is not flower_main


def test_an_unknown_option_of_another_command_is_still_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["dashboard", "--port=1", "--bogus=2"])
    assert exited.value.code == 2 and "unrecognized arguments: --bogus=2" in capsys.readouterr().err
