"""A headless Debian chromium driven through selenium (chromium-driver), for the tests of web
pages in a real browser."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver


@contextmanager
def chromium(eager: bool = False) -> Iterator[WebDriver]:
    """A browser with a profile of its own, closed at the end. ``eager``: a page counts as
    loaded once its document is (not its images and style sheets)."""
    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver_path, "make test installs chromium and chromium-driver (apt-get)"
    profile = tempfile.mkdtemp(prefix="pgtasks-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    if eager:
        options.page_load_strategy = "eager"
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
