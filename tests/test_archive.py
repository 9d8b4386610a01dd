import io
import zipfile

import pytest

from generator.archive import ArchiveError, replace_dir, safe_entry, zip_pack
from generator.pack import Pack, manifest


def sample() -> Pack:
    pack = Pack("lesson", "en", "exercise", {"b.txt": b"two", "a/one.txt": b"one"})
    pack.files["manifest.json"] = manifest(pack, None)
    return pack


def test_zip_is_deterministic_and_normalised():
    first, second = zip_pack(sample()), zip_pack(sample())
    assert first == second
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        infos = archive.infolist()
        assert [i.filename for i in infos] == ["lesson-en-exercise/a/one.txt", "lesson-en-exercise/b.txt",
                                               "lesson-en-exercise/manifest.json"]
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {(i.external_attr >> 16) & 0o777 for i in infos} == {0o644}


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
