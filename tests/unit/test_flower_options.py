"""Flower's command line as `pgtasks flower` reads it: `--name=value`, FLOWER_* variables and
flowerconfig.py, the command line winning over the file and the file over the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.cli.flower_command import parse_flower_options, split_flower
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


def test_the_flower_command_word_is_found_after_celery_options() -> None:
    assert split_flower(["-A", "proj", "flower", "--port=1"]) == (["-A", "proj"], ["--port=1"])
    assert split_flower(["-A", "flower", "worker"]) is None  # an app named flower
    assert split_flower(["dashboard"]) is None
