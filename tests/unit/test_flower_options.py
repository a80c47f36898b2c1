"""Flower's command line as `pgtasks flower` reads it: `--name=value`, FLOWER_* variables and
flowerconfig.py, the command line winning over the file and the file over the environment."""

from __future__ import annotations

import re
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


def test_runtime_buckets_end_with_the_implicit_inf_and_must_increase(tmp_path: Path) -> None:
    for text in ("1,2.5,inf", "1, 2.5, +inf", "1,2.5,Infinity", "1,2.5"):
        assert parse_flower_options([f"--task_runtime_metric_buckets={text}"], {})[
            "task_runtime_metric_buckets"
        ] == [1.0, 2.5]
    config = tmp_path / "flowerconfig.py"
    config.write_text("task_runtime_metric_buckets = [0.5, 2, float('inf')]\n")
    assert parse_flower_options([f"--conf={config}"], {})["task_runtime_metric_buckets"] == [0.5, 2.0]
    refused = {
        "2,1": "bucket bounds must increase, but 1 follows 2",
        "1,1": "bucket bounds must increase, but 1 follows 1",
        "1,nan": "bucket bounds must be finite numbers (only the last may be inf), not nan",
        "inf,1": "bucket bounds must be finite numbers (only the last may be inf), not inf",
        "-inf,1": "bucket bounds must be finite numbers (only the last may be inf), not -inf",
        "inf": "give at least one finite bucket bound",
        "1,x": "could not convert string to float: 'x'",
    }
    for text, message in refused.items():
        with pytest.raises(ConfigurationError, match=re.escape(f"--task_runtime_metric_buckets: {message}")):
            parse_flower_options([f"--task_runtime_metric_buckets={text}"], {})
    config.write_text("task_runtime_metric_buckets = [2, 1]\n")
    with pytest.raises(ConfigurationError, match="must increase"):
        parse_flower_options([f"--conf={config}"], {})


def test_ignored_options_with_values_flower_refuses_are_refused(tmp_path: Path) -> None:
    for option, message in (
        ("--inspect_timeout=abc", "--inspect_timeout: could not convert string to float: 'abc'"),
        ("--purge_offline_workers=1.5", "--purge_offline_workers: invalid literal for int()"),
        ("--max_workers=many", "--max_workers: invalid literal for int()"),
        ("--state_save_interval=x", "--state_save_interval: invalid literal for int()"),
        ("--keyfile=k.pem", "Both 'certfile' and 'keyfile' are required"),
    ):
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            parse_flower_options([option], {})
    with pytest.raises(ConfigurationError, match="environment variable FLOWER_INSPECT_TIMEOUT"):
        parse_flower_options([], {"FLOWER_INSPECT_TIMEOUT": "soon"})
    accepted = parse_flower_options(["--inspect_timeout=2500", "--certfile=c.pem", "--keyfile=k.pem"], {})
    assert accepted["inspect_timeout"] == 2500.0 and accepted["keyfile"] == "k.pem"


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
