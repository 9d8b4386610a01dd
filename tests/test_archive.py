import io
import zipfile

import pytest

from generator.files.archive import (
    ArchiveError,
    constant_part,
    deflate,
    replace_dir,
    safe_entry,
    zip_pack,
)
from generator.files.pack import Pack, manifest


def sample() -> Pack:
    pack = Pack("lesson", "en", "exercise", {"b.txt": b"two", "a/one.txt": b"one"})
    pack.files["manifest.json"] = manifest(pack, None)
    return pack


def test_zip_is_deterministic_and_normalised():
    first, second = zip_pack(sample()), zip_pack(sample())
    assert first == second
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        infos = archive.infolist()
        assert [i.filename for i in infos] == [
            "lesson-en-exercise/a/one.txt",
            "lesson-en-exercise/b.txt",
            "lesson-en-exercise/manifest.json",
        ]
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {(i.external_attr >> 16) & 0o777 for i in infos} == {0o644}


def test_a_constant_part_is_deflated_once_and_every_file_still_reads_back(tmp_path):
    """Pages share the vendored mermaid: its deflate is reused inside each page's stream, wherever it
    sits; zipfile (which checks every CRC) and a fresh inflate give back the exact bytes."""
    import random
    import zlib

    rng = random.Random(7)
    blob = constant_part(bytes(rng.randrange(97, 123) for _ in range(1 << 17)))
    files = {
        "start.html": blob + b"<p>after</p>",
        "middle.html": b"<p>\xc3\xa9t\xc3\xa9</p>" + blob + b"</html>",
        "end.html": b"before" + blob,
        "twice.html": blob + b"|" + blob,
        "only.html": blob,
        "small.txt": b"no blob here",
        "empty.txt": b"",
        "\u76ee\u5f55/\u6587\u4ef6.md": "\u4e2d\u6587".encode(),
    }
    for data in files.values():
        assert zlib.decompress(deflate(data), -15) == data
    assert (
        len(deflate(blob + b"x")) < len(blob) * 0.7
    )  # still compressed (26 letters: 4.7 bits each)
    pack = Pack("lesson", "en", "answer", dict(files))
    pack.files["manifest.json"] = manifest(pack, None)
    data = zip_pack(pack)
    (tmp_path / "p.zip").write_bytes(data)
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        assert archive.testzip() is None
        assert {
            i.filename.split("/", 1)[1]: archive.read(i) for i in archive.infolist()
        } == pack.files
        assert "lesson-en-answer/\u76ee\u5f55/\u6587\u4ef6.md" in archive.namelist()
        archive.extractall(tmp_path / "out")
    assert (tmp_path / "out" / "lesson-en-answer" / "twice.html").read_bytes() == files[
        "twice.html"
    ]


@pytest.mark.parametrize("name", ["../x", "/abs", "a/../../b", "a//b", "./a", "a\\b", "C:x", ""])
def test_unsafe_names_are_refused(name):
    with pytest.raises(ArchiveError):
        safe_entry(name)


def test_manifest_mismatch_is_caught():
    pack = sample()
    pack.files["b.txt"] = b"changed after the manifest"
    with pytest.raises(ArchiveError, match="does not match its sha256"):
        zip_pack(pack)


def test_replace_dir_swaps_whole(tmp_path):
    target, new = tmp_path / "dist", tmp_path / "dist.new"
    target.mkdir()
    (target / "old.zip").write_text("old")
    new.mkdir()
    (new / "new.zip").write_text("new")
    replace_dir(new, target)
    assert [p.name for p in target.iterdir()] == ["new.zip"]
    assert not new.exists() and not (tmp_path / "dist.old").exists()


def test_a_crc_combined_around_constant_parts_is_zlibs():
    """archive.crc32 takes a constant part's CRC instead of reading its bytes: the same value as
    zlib.crc32, wherever the parts are (or are not)."""
    import random
    import zlib
    from generator.files.archive import crc_times, crc_x_power, crc32

    rng = random.Random(5)
    for size in (0, 1, 3, 64, 4097, 1 << 17, 3_600_001):
        head, tail = rng.randbytes(rng.randrange(50)), rng.randbytes(size)
        assert crc_times(crc_x_power(8 * size), zlib.crc32(head)) ^ zlib.crc32(tail) == zlib.crc32(
            head + tail
        )
    blob = constant_part(bytes(rng.randrange(97, 123) for _ in range(1 << 17)))
    for data in (
        b"",
        b"x",
        blob,
        b"head" + blob,
        blob + b"tail",
        b"h" + blob + b"m" + blob + b"t",
        blob[:-1],
    ):
        assert crc32(data) == zlib.crc32(data)
