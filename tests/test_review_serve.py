"""`coursepack review` as a command: it serves on 127.0.0.1, prints its address with the token,
and refuses a request without it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_review_serves_on_loopback_with_a_token(tmp_path):
    from tests.review_fixture import make_folder
    from generator.review.sync import sync

    folder = make_folder(tmp_path)
    sync(folder)
    server = subprocess.Popen(
        [sys.executable, "-m", "generator", "review", str(folder), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert line.startswith(f"review of {folder}: http://127.0.0.1:")
        address = line.split(": ", 1)[1].strip()
        host_port, token = address.split("/?token=")
        port = int(host_port.rsplit(":", 1)[1])
        import urllib.error
        import urllib.request

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert refused.value.code == 403
        import http.cookiejar

        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        page = browser.open(address, timeout=10)  # the token, then the cookie it sets
        assert page.status == 200 and page.url == f"http://127.0.0.1:{port}/"
        with socket.socket() as other:  # not on the machine's other addresses
            other.settimeout(2)
            outside = socket.gethostbyname(socket.gethostname())
            if not outside.startswith("127."):
                assert other.connect_ex((outside, port)) != 0
    finally:
        server.terminate()
        server.wait(timeout=10)
        time.sleep(0.1)


def test_review_refuses_a_taken_port_and_an_unknown_language(tmp_path, capsys):
    from generator.cli import main
    from generator.review.sync import sync
    from tests.review_fixture import make_folder

    folder = make_folder(tmp_path)
    sync(folder)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["review", str(folder), "--port", str(port)]) == 1
    assert main(["review", str(folder), "--locale", "fr"]) == 1
    err = capsys.readouterr().err
    assert (
        f"cannot listen on 127.0.0.1:{port}" in err
        and "--locale fr: the page has words for en, zh-CN" in err
    )
    assert "Traceback" not in err
