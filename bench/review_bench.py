"""How fast the review is for a class: the page opening, the next answer, a save, the exports.

    python bench/review_bench.py [-n 600] [--repeat 30] [--smoke]

A grading folder of N students is built in a temporary folder (tests/review_fixture.py: each with
an answer in every manual part, the code, the automatic results), its gradebook filled, then the
review's server started on 127.0.0.1 (the same Werkzeug server `coursepack review` starts) and
asked over HTTP as a browser would (one connection per request). Prints, in milliseconds, the
median and the slowest of --repeat requests for: the overview (the page opening), the next answer
of a question, a student's page (code view and all), a save (committed, grades.csv and the
student's feedback page rewritten); and the seconds of each export of the N rows. Never fails on
time. --smoke: N = 20, --repeat 3.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.review.app import COOKIE, HEADER, Settings, create_app  # noqa: E402
from generator.review.exports import export, grades_csv  # noqa: E402
from generator.review.store import Gradebook  # noqa: E402
from generator.review.sync import sync  # noqa: E402
from tests.review_fixture import make_folder, student  # noqa: E402

TOKEN = "bench-token"


def timed(call, repeat: int) -> tuple[float, float]:
    """(median, slowest) milliseconds of repeat calls."""
    times = []
    for i in range(repeat):
        began = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), max(times)


def request(base: str, path: str, body: dict | None = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path,
        data=data,
        headers={"Cookie": f"{COOKIE}={TOKEN}", HEADER: TOKEN, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as answer:
        return answer.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--students", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    n, repeat = (20, 3) if args.smoke else (args.students, args.repeat)
    import logging
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        folder = make_folder(Path(tmp), students=[student(i) for i in range(1, n + 1)])
        sync(folder)
        print(
            f"review bench: {n} students; gradebook filled in {time.perf_counter() - began:.2f} s"
        )
        server = make_server(
            "127.0.0.1", 0, create_app(Settings(folder, TOKEN, "bench")), threaded=True
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        try:
            rows = [
                ("open the review page (overview)", lambda i: request(base, "/")),
                ("open a question (first answer)", lambda i: request(base, "/part/q1/0")),
                ("next answer", lambda i: request(base, f"/part/q1/{(i + 1) % n}")),
                ("a student's page", lambda i: request(base, f"/student/{i % n}")),
                (
                    "save a score",
                    lambda i: request(
                        base,
                        "/api/score",
                        {"at": i % n, "part": "q2", "points": 1, "comment": "ok", "version": 0},
                    ),
                ),
            ]
            for name, call in rows:
                median, slowest = timed(call, min(repeat, n) if name == "save a score" else repeat)
                print(f"  {name:34s} median {median:7.1f} ms   slowest {slowest:7.1f} ms")
        finally:
            server.shutdown()
        book = Gradebook(folder)
        for i in range(n):  # every part graded: the exports write totals
            for part in ("explanation", "q1", "q3"):
                book.set_score(f"s{i + 1:03d}", part, 1, "", 0, "bench")
        sheet = Path(tmp) / "worksheet.csv"
        sheet.write_text(
            "Identifier,Full name,Email address,Grade,Last modified (grade)\n"
            + "".join(
                f"Participant {i},Student Name{i},s{i:03d}@uni.edu,,-\n" for i in range(1, n + 1)
            ),
            encoding="utf-8",
        )
        print(f"  exports of {n} rows:")
        began = time.perf_counter()
        grades_csv(book)
        print(f"    {'grades.csv':10s} {time.perf_counter() - began:6.3f} s")
        for fmt in ("canvas", "moodle", "otter", "nbgrader"):
            began = time.perf_counter()
            export(folder, fmt, Path(tmp) / f"{fmt}.csv", moodle_worksheet=sheet)
            print(f"    {fmt:10s} {time.perf_counter() - began:6.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
