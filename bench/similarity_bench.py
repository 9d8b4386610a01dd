"""Copy detection measured, not assumed: a synthetic class of lesson 3 with planted copies among
independently written answers, compared by generator/grade/similarity.py; prints recall, false
positives and the time.

    python bench/similarity_bench.py [--students 600] [--seed 1]

Independent answers are drawn word by word (English) or character by character (Chinese) from the
lesson's own text, with one or two stock phrases that many students share (as real students write
"tl.maximum turns NaN into 0"); the reference answers and the questions are the lesson's real ones,
in both languages. Planted: verbatim copies, reordered sentences, lightly reworded copies (one word
in eight replaced), the course's English translation of the Chinese reference answer lightly
edited, a Chinese reference answer lightly edited, the question copied back, and code beyond the
blank copied with identifiers renamed and reformatted."""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ruamel.yaml import YAML  # noqa: E402

from generator.grade.similarity import Settings, compare_class  # noqa: E402

PARTS = ("q1", "q2", "q3")
STOCK = [
    "tl.maximum turns NaN into zero",
    "the mask keeps the last block in bounds",
    "NaN stays NaN in torch.relu",
    "one program handles one block",
    "the kernel reads and writes once",
    "a branch would need one scalar",
    "propagate_nan keeps the NaN",
    "fusion saves a round trip to memory",
    "the grid is cdiv of n",
    "每个程序处理一个块",
    "掩码保护最后一个块",
    "融合省去一次显存往返",
    "默认的最大值会丢掉非数",
]
EXERCISE = """import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    xv = tl.load(x_ptr + offsets, mask=mask)
    out = ______
    tl.store(out_ptr + offsets, out, mask=mask)
"""
FILLS = [
    "tl.maximum(xv, 0.0)",
    "tl.where(xv > 0, xv, 0.0)",
    "tl.maximum(xv, 0.0, propagate_nan=tl.PropagateNan.ALL)",
    "tl.where(xv > 0.0, xv, 0.0)",
    "xv * (xv > 0)",
]


def lesson_text(locale: str) -> dict:
    return YAML(typ="safe").load(
        (REPO / "content/lessons/lesson03_relu" / f"text.{locale}.yaml").read_text("utf-8")
    )


def _vocabulary(text: dict, chinese: bool) -> list[str]:
    prose = " ".join(str(v) for v in text.values() if isinstance(v, str))
    if chinese:
        return re.findall(r"[\u4e00-\u9fff]", prose)
    return re.findall(r"[A-Za-z]+", prose)


def _answer(rng: random.Random, words: list[str], chinese: bool) -> str:
    sentences = []
    for _ in range(rng.randint(3, 5)):
        n = rng.randint(20, 35) if chinese else rng.randint(9, 16)
        body = ("" if chinese else " ").join(rng.choice(words) for _ in range(n))
        sentences.append(body)
    if rng.random() < 0.8:
        sentences.insert(rng.randrange(len(sentences) + 1), rng.choice(STOCK))
    return ("。" if chinese else ". ").join(sentences) + ("。" if chinese else ".")


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.。])\s*", text) if s.strip()]


def _reword(rng: random.Random, text: str, words: list[str], share: float = 0.125) -> str:
    if re.search(r"[\u4e00-\u9fff]", text):
        return "".join(
            rng.choice(words) if ("\u4e00" <= c <= "\u9fff" and rng.random() < share) else c
            for c in text
        )
    return re.sub(
        r"[A-Za-z]+", lambda m: rng.choice(words) if rng.random() < share else m.group(0), text
    )


def _expr(rng: random.Random, names: list[str], depth: int, top: bool = True) -> str:
    if depth == 0 or (not top and rng.random() < 0.3):
        return rng.choice(names + [str(rng.randint(1, 9)), f"{rng.randint(1, 9)}.5"])
    shape = rng.randrange(4)
    a, b = _expr(rng, names, depth - 1, False), _expr(rng, names, depth - 1, False)
    if shape == 0:
        return f"{rng.choice(['tl.exp', 'tl.abs', 'tl.sqrt', 'tl.log'])}({a})"
    if shape == 1:
        return f"tl.where({a} {rng.choice(['>', '<', '>='])} {b}, {a}, {b})"
    return f"({a} {rng.choice(['+', '-', '*', '/'])} {b})"


def _helper(rng: random.Random, names: list[str]) -> str:
    """A helper of a student's own: a random number of statements over random expression trees."""
    name, *args = names
    body = [
        f"    {rng.choice(args)} = {_expr(rng, args, rng.randint(2, 3))}"
        for _ in range(rng.randint(3, 6))
    ]
    return (
        f"def {name}({', '.join(args)}):\n"
        + "\n".join(body)
        + f"\n    return {_expr(rng, args, 2)}\n"
    )


def _code(rng: random.Random, i: int) -> str:
    code = EXERCISE.replace("______", rng.choice(FILLS))
    if i % 3 == 0:  # a third of the class wrote a helper of their own
        code += "\n\n" + _helper(rng, [f"f{i}", f"p{i}", f"q{i}"])
    return code


def _renamed(code: str, rng: random.Random) -> str:
    names = sorted(set(re.findall(r"\b[fpq]\d+\b", code)))
    for name in names:
        code = re.sub(rf"\b{name}\b", f"renamed_{rng.randint(100, 999)}_{name[0]}", code)
    return code.replace("    ", "        ").replace("):\n", "):   # my own helper\n")


def planted_class(students: int = 600, seed: int = 1):
    """(documents, sources, exercises, planted): planted is a set of (part, student, other)."""
    rng = random.Random(seed)
    texts = {"en": lesson_text("en"), "zh-CN": lesson_text("zh-CN")}
    words = {"en": _vocabulary(texts["en"], False), "zh-CN": _vocabulary(texts["zh-CN"], True)}
    sources = {
        q: {
            "reference": {loc: t["questions"][q]["answer"] for loc, t in texts.items()},
            "question": {loc: t["questions"][q]["prompt"] for loc, t in texts.items()},
        }
        for q in PARTS
    }
    ids = [f"s{i:04d}" for i in range(students)]
    lang = {s: ("zh-CN" if i % 2 else "en") for i, s in enumerate(ids)}
    docs = {s: {q: _answer(rng, words[lang[s]], lang[s] == "zh-CN") for q in PARTS} for s in ids}
    for i, s in enumerate(ids):
        docs[s]["code"] = _code(rng, i)
    planted = set()
    order = ids[:]
    rng.shuffle(order)
    copiers = iter(order)

    def student_pair(kind):
        while True:
            a, b = next(copiers), next(copiers)
            if kind != "zh" or lang[b] == "zh-CN":
                return a, b

    per_kind = max(1, students // 60)
    for _ in range(per_kind):
        a, b = student_pair("any")
        q = rng.choice(PARTS)
        docs[a][q] = docs[b][q]  # verbatim
        planted.add((q, *sorted((a, b))))
        a, b = student_pair("any")
        q = rng.choice(PARTS)
        parts = _sentences(docs[b][q])
        rng.shuffle(parts)
        docs[a][q] = " ".join(parts)  # sentences reordered
        planted.add((q, *sorted((a, b))))
        a, b = student_pair("any")
        q = rng.choice(PARTS)
        docs[a][q] = _reword(rng, docs[b][q], words[lang[b]])  # one word in eight replaced
        planted.add((q, *sorted((a, b))))
        a = next(copiers)
        q = rng.choice(PARTS)
        docs[a][q] = _reword(
            rng, sources[q]["reference"]["en"], words["en"]
        )  # the translated reference
        planted.add((q, a, "reference:en"))
        a = next(copiers)
        q = rng.choice(PARTS)
        docs[a][q] = _reword(rng, sources[q]["reference"]["zh-CN"], words["zh-CN"])
        planted.add((q, a, "reference:zh-CN"))
        a = next(copiers)
        q = "q1"
        docs[a][q] = (
            sources[q]["question"][lang[a]] + " " + docs[a][q][:40]
        )  # the question copied back
        planted.add((q, a, f"question:{lang[a]}"))
        a = next(copiers)
        b = rng.choice([s for i, s in enumerate(ids) if i % 3 == 0 and s != a])
        docs[a]["code"] = _renamed(docs[b]["code"], rng)  # code beyond the blank, renamed
        planted.add(("code", *sorted((a, b))))
    return docs, sources, [EXERCISE], planted


def shared_source(planted: set) -> set:
    """Pairs of students who copied the same text (a reference answer, one student) without copying
    each other: a match between them is right, but not required (each reworded it on their own)."""
    groups = {}
    for part, a, b in planted:
        groups.setdefault((part, b), set()).add(a)
        if not b.startswith(("reference:", "question:")):
            groups.setdefault((part, a), set()).add(b)
    closed = set()
    for (part, source), copiers in groups.items():
        if source.startswith("question:"):
            continue  # the question is discounted between students
        for a in copiers:
            for b in copiers:
                if a < b:
                    closed.add((part, a, b))
    return closed - planted


def measure(students: int, seed: int, settings: Settings = Settings()) -> dict:
    docs, sources, exercises, planted = planted_class(students, seed)
    start = time.perf_counter()
    matches = compare_class(docs, sources, exercises, settings)
    seconds = time.perf_counter() - start
    found = {
        (m.part, *sorted((m.student, m.other)))
        if m.kind == "student"
        else (m.part, m.student, m.other)
        for m in matches
    }
    return {
        "students": students,
        "answers": students * len(PARTS),
        "planted": len(planted),
        "found": len(planted & found),
        "missed": sorted(planted - found),
        "false_positives": sorted(found - planted - shared_source(planted)),
        "seconds": seconds,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.students < 10:
        parser.error("--students must be at least 10")
    r = measure(args.students, args.seed)
    print(
        f"students {r['students']}  answers {r['answers']}  planted {r['planted']}  "
        f"found {r['found']}  recall {r['found'] / r['planted']:.3f}  "
        f"false positives {len(r['false_positives'])}  seconds {r['seconds']:.2f}"
    )
    for item in r["missed"]:
        print("missed", *item)
    for item in r["false_positives"]:
        print("false positive", *item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
