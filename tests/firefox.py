"""Headless Firefox from the system (Debian's `firefox-esr`), driven through WebDriver BiDi, the
protocol Firefox itself serves on `--remote-debugging-port`: no geckodriver (Debian packages none),
nothing downloaded. A fresh profile per browser forbids the network (every proxy a closed local
port, no DNS), so a page that tried to fetch would fail loudly as well as show in the log.

`Firefox.execute_script(body)` runs `body` as a function, as Selenium's does (`return ...`), so the
same checks serve both browsers (tests/chromium.py's wait_for_figures among them)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

FIREFOX = os.environ.get("COURSEPACK_FIREFOX", "/usr/bin/firefox-esr")
PREFS = {
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "network.proxy.type": 1,  # every request through a closed local port
    **{f"network.proxy.{kind}": "127.0.0.1" for kind in ("http", "ssl", "socks")},
    **{f"network.proxy.{kind}_port": 9 for kind in ("http", "ssl", "socks")},
    "network.proxy.no_proxies_on": "",
    "network.dns.disabled": True,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
}
LISTENING = re.compile(r"WebDriver BiDi listening on (ws://\S+)")


def missing() -> str | None:
    """Why the Firefox tests cannot run here, or None."""
    if not (Path(FIREFOX).is_file() and os.access(FIREFOX, os.X_OK)):
        return f"no {FIREFOX} (Debian: apt-get install firefox-esr)"
    try:
        import websocket  # noqa: F401  (websocket-client: a dependency of selenium, in requirements/lock.txt)
    except ImportError:
        return "websocket-client is not installed (it is in requirements/lock.txt)"
    return None


class Firefox:
    def __init__(self, timeout: float = 90.0):
        import websocket

        self.profile = Path(tempfile.mkdtemp(prefix="coursepack-firefox-"))
        (self.profile / "user.js").write_text(
            "".join(f'user_pref("{k}", {json.dumps(v)});\n' for k, v in PREFS.items())
        )
        self.process = subprocess.Popen(
            [
                FIREFOX,
                "--headless",
                "--no-remote",
                "--profile",
                str(self.profile),
                "--remote-debugging-port=0",
                "--window-size=1000,1300",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, MOZ_CRASHREPORTER_DISABLE="1"),
        )
        self.socket, self.ids, self.events = None, 0, []
        try:  # a browser that started is stopped, whatever fails next
            url, lines = self._address(timeout)
            if url is None:
                raise RuntimeError(
                    f"{FIREFOX} did not start WebDriver BiDi: {''.join(lines)[-2000:]}"
                )
            self.socket = websocket.create_connection(
                f"{url}/session", timeout=timeout, suppress_origin=True
            )
            self._call(
                "session.new", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": False}}}
            )
            self._call(
                "session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]}
            )
            self.context = self._call("browsingContext.getTree", {})["contexts"][0]["context"]
        except BaseException:
            self.quit()
            raise

    def _address(self, timeout: float) -> tuple[str | None, list[str]]:
        """The BiDi address Firefox prints on stderr (it picked a free port); stderr is drained after."""
        found, lines, ready = [], [], threading.Event()

        def read() -> None:
            for line in self.process.stderr:
                lines.append(line)
                match = LISTENING.search(line)
                if match and not found:
                    found.append(match.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(timeout)
        return (found[0] if found else None), lines

    def _call(self, method: str, params: dict) -> dict:
        self.ids += 1
        self.socket.send(json.dumps({"id": self.ids, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.ids:
                if message.get("type") == "error":
                    raise RuntimeError(
                        f"{method}: {message.get('error')}: {message.get('message')}"
                    )
                return message["result"]
            if message.get("type") == "event":
                self.events.append(message)

    def get(self, url: str) -> None:
        self.events.clear()
        self._call(
            "browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"}
        )

    def execute_script(self, body: str):
        result = self._call(
            "script.callFunction",
            {
                "functionDeclaration": f"function () {{ {body} }}",
                "target": {"context": self.context},
                "awaitPromise": True,
                "resultOwnership": "none",
            },
        )
        if result.get("type") == "exception":
            raise RuntimeError(f"script failed: {result['exceptionDetails'].get('text')}")
        return _value(result["result"])

    def console(self, levels: tuple[str, ...] = ("error",)) -> list[str]:
        """Log entries (console and JavaScript errors) since the last page load."""
        self.execute_script("return 0")  # a round trip: the events sent before it are read
        return [
            event["params"].get("text") or ""
            for event in self.events
            if event["method"] == "log.entryAdded" and event["params"].get("level") in levels
        ]

    def requests(self) -> list[str]:
        """URLs of the network requests the page started since it loaded (file: loads are not
        network requests: Firefox reports none for them)."""
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event["method"] == "network.beforeRequestSent"
        ]

    def screenshot(self, path: Path) -> Path:
        shot = self._call(
            "browsingContext.captureScreenshot", {"context": self.context, "origin": "document"}
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def quit(self) -> None:
        try:
            if self.socket is not None:
                self._call("browser.close", {})
                self.socket.close()
        except Exception:  # already gone: it is stopped below either way
            pass
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def _value(remote: dict):
    """A BiDi RemoteValue as Python (what Selenium's execute_script returns for the same value)."""
    kind = remote.get("type")
    if kind in ("undefined", "null"):
        return None
    if kind in ("array", "set"):
        return [_value(item) for item in remote.get("value", [])]
    if kind in ("object", "map"):
        return {
            (k if isinstance(k, str) else _value(k)): _value(v) for k, v in remote.get("value", [])
        }
    if kind == "number" and isinstance(remote.get("value"), str):  # NaN, Infinity, -0
        return float(remote["value"].replace("Infinity", "inf"))
    return remote.get("value")
