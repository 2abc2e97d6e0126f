import io
import warnings
import zipfile

import pytest

from core.archives import check_zip, safe_extract, safe_member_read
from core.exceptions import ApplicationError
from tests.uploads.builders import MIB, with_declared_size, with_flag, zip_bytes, zip_of_zeros


def _symlink(name: str = "link", target: bytes = b"/etc/passwd") -> bytes:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = 0o120777 << 16
    return zip_bytes([(info, target)])


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (zip_bytes({"../../evil": b"x"}), "points outside the archive"),
        (zip_bytes({"docs/../../evil": b"x"}), "points outside the archive"),
        (zip_bytes({"/etc/cron.d/evil": b"x"}), "absolute path"),
        (zip_bytes({"C:/Windows/evil.dll": b"x"}), "absolute path"),
        (zip_bytes({"..\\..\\evil.txt": b"x"}), "backslashes"),
        (zip_bytes({"a\x07b": b"x"}), "control characters"),
        (zip_bytes({"evil\u202etxt.exe": b"x"}), "control characters"),
        (zip_bytes({"a//b": b"x"}), "empty or '.' folder"),
        (_symlink(), "symbolic link"),
        (with_flag(zip_bytes({"secret.txt": b"x"}), 0x1), "encrypted"),
        (zip_of_zeros("zeros.bin", 4 * MIB), "looks like a zip bomb"),
        (b"PK\x03\x04 not really a zip", "not a valid zip archive"),
    ],
    ids=["dotdot", "dotdot-inside", "absolute", "drive-letter", "backslash", "control", "bidi-override", "empty-segment",
         "symlink", "encrypted", "ratio-bomb", "not-a-zip"],
)
def test_check_zip_refuses_unsafe_archives_with_a_clear_message(archive, message, tmp_path):
    with pytest.raises(ApplicationError, match=message):
        check_zip(archive)
    with pytest.raises(ApplicationError, match=message):
        safe_extract(archive, tmp_path / "out")
    assert not any((tmp_path / "out").rglob("*"))


def test_check_zip_counts_entries_sizes_and_duplicates():
    eleven = zip_bytes({f"f{i}.txt": b"x" for i in range(11)})
    with pytest.raises(ApplicationError, match="at most 10"):
        check_zip(eleven, max_entries=10)
    assert len(check_zip(eleven, max_entries=11)) == 11

    big = zip_bytes({"a.txt": b"a" * 600, "b.txt": b"b" * 600})
    with pytest.raises(ApplicationError, match="expands to more than"):
        check_zip(big, max_total_bytes=1000)
    with pytest.raises(ApplicationError, match="one entry may be at most"):
        check_zip(big, max_entry_bytes=500)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it writes
        twice = zip_bytes([("a.txt", b"1"), ("a.txt", b"2")])
    with pytest.raises(ApplicationError, match="more than once"):
        check_zip(twice)


def test_a_huge_central_directory_is_refused_before_zipfile_parses_it():
    # 3,000 entries against a limit of 10: refused from the end-of-directory record.
    archive = zip_bytes({f"{i}": b"" for i in range(3000)})
    with pytest.raises(ApplicationError, match="more than 10 entries"):
        check_zip(io.BytesIO(archive), max_entries=10)


def test_safe_extract_writes_only_regular_files_under_the_destination(tmp_path):
    archive = zip_bytes({"Deal/": b"", "Deal/LOI.md": b"# LOI", "Notes.txt": b"hello"})
    written = safe_extract(archive, tmp_path / "world")
    assert sorted(p.relative_to(tmp_path / "world").as_posix() for p in written) == ["Deal/LOI.md", "Notes.txt"]
    assert (tmp_path / "world" / "Deal" / "LOI.md").read_bytes() == b"# LOI"


def test_safe_extract_never_overwrites_or_follows_a_planted_symlink(tmp_path):
    dest = tmp_path / "world"
    dest.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (dest / "Deal").symlink_to(outside)
    with pytest.raises(ApplicationError, match="outside the destination"):
        safe_extract(zip_bytes({"Deal/evil.txt": b"x"}), dest)
    assert not any(outside.iterdir())

    (dest / "keep.txt").write_text("mine")
    with pytest.raises(ApplicationError, match="would overwrite"):
        safe_extract(zip_bytes({"new.txt": b"n", "keep.txt": b"theirs"}), dest)
    assert (dest / "keep.txt").read_text() == "mine"
    assert not (dest / "new.txt").exists()  # what was written before the failure is removed


def test_an_entry_lying_about_its_size_yields_an_error_not_its_data(tmp_path):
    # 3 MB of zeros that claims to be 1,000 bytes: the ratio check sees nothing odd, and
    # reading stops at the declared size and fails the CRC check.
    archive = with_declared_size(zip_bytes({"small.txt": b"\x00" * (3 * MIB)}), 1000)
    check_zip(archive)
    with pytest.raises(ApplicationError, match="damaged"):
        safe_extract(archive, tmp_path / "out")
    assert not any((tmp_path / "out").rglob("*"))
    with zipfile.ZipFile(io.BytesIO(archive)) as opened, pytest.raises(ApplicationError, match="damaged"):
        safe_member_read(opened, "small.txt", 10_000)


def test_safe_member_read_reads_at_most_the_limit():
    with zipfile.ZipFile(io.BytesIO(zip_bytes({"a.xml": b"<a/>" * 100}))) as archive:
        assert safe_member_read(archive, "a.xml", 400) == b"<a/>" * 100
        with pytest.raises(ApplicationError, match=r"one entry may be at most 399 bytes"):
            safe_member_read(archive, "a.xml", 399)
        with pytest.raises(ApplicationError, match="no entry"):
            safe_member_read(archive, "missing.xml", 400)
