"""Headless Chromium from the system (Debian's `chromium` and `chromium-driver`), driven by
Selenium. Both paths are given explicitly, so Selenium Manager never looks for (or downloads) a
browser or a driver."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

CHROMIUM = os.environ.get("COURSEPACK_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("COURSEPACK_CHROMEDRIVER", "/usr/bin/chromedriver")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    absent = [
        path
        for path in (CHROMIUM, CHROMEDRIVER)
        if not (Path(path).is_file() and os.access(path, os.X_OK))
    ]
    if absent:
        return f"no {' or '.join(absent)} (Debian: apt-get install chromium chromium-driver fonts-noto-cjk)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in requirements/lock.txt)"
    return None


def new_driver(width: int = 1000, height: int = 1300, dark: bool = False):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault(
        "SE_OFFLINE", "true"
    )  # Selenium Manager, if ever asked, must not download
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    if dark:
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
        )
    return driver


def set_offline(driver, offline: bool = True) -> None:
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {
            "offline": offline,
            "latency": 0,
            "downloadThroughput": -1 if not offline else 0,
            "uploadThroughput": -1 if not offline else 0,
        },
    )


def wait_for_figures(driver, timeout: float = 60.0) -> str:
    """The page's figure state once mermaid has finished: 'done', 'error', or '' (no figures)."""
    deadline = time.monotonic() + timeout
    while True:
        state = driver.execute_script(
            "return document.documentElement.getAttribute('data-figures') || ''"
        )
        if state != "pending" or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def requests_sent(driver) -> list[str]:
    """URLs of every request the page started since the last call (DevTools performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def screenshot(driver, path: Path, full: bool = True) -> Path:
    """A PNG of the whole page (or the viewport)."""
    import base64

    path.parent.mkdir(parents=True, exist_ok=True)
    if full:
        metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics["cssContentSize"]
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": size["height"],
                    "scale": 1,
                },
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))
    else:
        driver.save_screenshot(str(path))
    return path
