"""Safe handling of zip archives: inspect everything before anything is extracted or
handed to a library that opens the zip itself (docx, xlsx and pptx are zips).

What an archive can do to us, and what refuses it here:
- write outside the destination (`../x`, `/etc/x`, `C:\\x`, `a\\..\\x`) → path checks;
- plant a symlink that a later write follows → only regular files and folders;
- exhaust memory or disk (zip bombs: one entry of zeros, or many entries sharing one
  compressed stream) → caps on entries, total and per-entry size and compression ratio,
  all read from the central directory *before* opening any entry. The declared sizes are
  enforced while reading too: `zipfile` never returns more than an entry's declared size
  and fails the CRC check when the data was longer, so a lying header only gets an error;
- confuse two readers that pick different entries of the same name → duplicate names;
- hide content from our checks → encrypted entries, unknown compression methods.
"""

import io
import os
import re
import stat
import struct
import unicodedata
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from core.exceptions import ApplicationError

MAX_ENTRIES = 10_000
MAX_TOTAL_BYTES = 1024 * 1024 * 1024  # 1 GiB uncompressed, the whole archive
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # 256 MiB uncompressed, one entry
# Deflate tops out near 1000:1 on runs of zeros; text and XML compress 5–30:1. Apache POI
# refuses office files above 100:1 too (its MIN_INFLATE_RATIO of 0.01).
MAX_RATIO = 100
# Small entries may compress far better than MAX_RATIO (a page of spaces) and cannot hurt.
RATIO_GRACE_BYTES = 1024 * 1024
# A central-directory entry is 46 bytes + name + extra + comment; this is generous.
_MAX_DIRECTORY_BYTES_PER_ENTRY = 1024

_ALLOWED_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_DRIVE = re.compile(r"^[A-Za-z]:")
# Format characters are refused (bidi overrides make "evil\u202etxt.exe" read as
# "evilexe.txt"), except the joiners that Persian, Indic and emoji names need.
_JOINERS = {"\u200c", "\u200d"}
_CHUNK = 64 * 1024

ZipSource = str | os.PathLike | bytes | BinaryIO | zipfile.ZipFile


def check_zip(
    file_or_path: ZipSource,
    *,
    max_entries: int = MAX_ENTRIES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_ratio: float = MAX_RATIO,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
) -> list[zipfile.ZipInfo]:
    """Check a zip archive without extracting anything; return its entries.

    Raises ApplicationError naming the first problem found. Accepts a path, the bytes of
    the archive, a binary file object or an open ZipFile.
    """
    with _open(file_or_path, max_entries=max_entries) as archive:
        entries = archive.infolist()
        if len(entries) > max_entries:
            raise ApplicationError(f"The archive has {len(entries):,} entries; at most {max_entries:,} are accepted.")
        seen: set[str] = set()
        total = 0
        for info in entries:
            key = check_member(info, max_ratio=max_ratio, max_entry_bytes=max_entry_bytes)
            if key in seen:
                raise ApplicationError(f"The archive holds {info.filename!r} more than once; each name may appear only once.")
            seen.add(key)
            total += info.file_size
            if total > max_total_bytes:
                raise ApplicationError(
                    f"The archive expands to more than {_size(max_total_bytes)}; at most {_size(max_total_bytes)} is accepted."
                )
        return entries


def check_member(info: zipfile.ZipInfo, *, max_ratio: float = MAX_RATIO, max_entry_bytes: int = MAX_ENTRY_BYTES) -> str:
    """Refuse one entry that is unsafe to extract; return its normalised name (the key
    duplicate detection compares)."""
    name = info.filename
    shown = repr(name[:200])
    if not name:
        raise ApplicationError("The archive has an entry with an empty name.")
    if any(unicodedata.category(ch) in ("Cc", "Cf") and ch not in _JOINERS for ch in name):
        raise ApplicationError(f"The archive entry {shown} has control characters in its name.")
    if "\\" in name:
        raise ApplicationError(f"The archive entry {shown} uses backslashes in its path; zip paths use '/'.")
    if name.startswith("/") or _DRIVE.match(name):
        raise ApplicationError(f"The archive entry {shown} has an absolute path; only relative paths are accepted.")
    parts = name.rstrip("/").split("/")
    if any(part == ".." for part in parts):
        raise ApplicationError(f"The archive entry {shown} points outside the archive ('..' in its path).")
    if any(part in ("", ".") for part in parts):
        raise ApplicationError(f"The archive entry {shown} has an empty or '.' folder in its path.")
    mode = info.external_attr >> 16
    file_type = stat.S_IFMT(mode)
    if file_type == stat.S_IFLNK:
        raise ApplicationError(f"The archive entry {shown} is a symbolic link; only regular files are accepted.")
    if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ApplicationError(f"The archive entry {shown} is a special file (device, pipe or socket); only regular files are accepted.")
    if info.flag_bits & 0x1:
        raise ApplicationError(f"The archive entry {shown} is encrypted; upload it without a password.")
    if info.compress_type not in _ALLOWED_METHODS:
        raise ApplicationError(f"The archive entry {shown} uses an unsupported compression method ({info.compress_type}).")
    if info.file_size > max_entry_bytes:
        raise ApplicationError(
            f"The archive entry {shown} expands to {_size(info.file_size)}; one entry may be at most {_size(max_entry_bytes)}."
        )
    if info.file_size > RATIO_GRACE_BYTES and info.file_size > max_ratio * max(info.compress_size, 1):
        ratio = info.file_size / max(info.compress_size, 1)
        raise ApplicationError(
            f"The archive entry {shown} expands {ratio:,.0f} times its compressed size (at most {max_ratio:,.0f} is accepted): "
            "it looks like a zip bomb."
        )
    return unicodedata.normalize("NFC", name.rstrip("/"))


def safe_extract(
    zip: ZipSource,
    dest: str | os.PathLike,
    *,
    max_entries: int = MAX_ENTRIES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_ratio: float = MAX_RATIO,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
) -> list[Path]:
    """Check the whole archive, then write its regular files under `dest`; return them.

    Every member is checked again as it is written, the bytes written are counted
    against the limits (not only the declared sizes), existing files are never
    overwritten and nothing is written through a symlink. On any failure the files and
    folders written so far are removed again.
    """
    limits = {"max_ratio": max_ratio, "max_entry_bytes": max_entry_bytes}
    root = Path(dest).resolve()
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    made_dirs: list[Path] = []
    with _open(zip, max_entries=max_entries) as archive:
        check_zip(archive, max_entries=max_entries, max_total_bytes=max_total_bytes, **limits)
        total = 0
        try:
            for info in archive.infolist():
                check_member(info, **limits)
                target = _target(root, info.filename)
                if info.is_dir():
                    _make_dirs(root, target, made_dirs)
                    continue
                _make_dirs(root, target.parent, made_dirs)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
                fd = os.open(target, flags, 0o644)
                written.append(target)
                with os.fdopen(fd, "wb") as out, archive.open(info) as src:
                    size = 0
                    while chunk := src.read(_CHUNK):
                        size += len(chunk)
                        total += len(chunk)
                        if size > max_entry_bytes or total > max_total_bytes:
                            raise ApplicationError(f"The archive entry {info.filename[:200]!r} expands beyond the accepted size.")
                        out.write(chunk)
        except FileExistsError:
            _remove(written, made_dirs)
            raise ApplicationError(f"The archive would overwrite {info.filename[:200]!r}, which already exists.") from None
        except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
            _remove(written, made_dirs)
            raise ApplicationError(f"The archive is damaged and cannot be extracted ({exc}).") from None
        except OSError as exc:  # disk full, permissions: say what, never the server path
            _remove(written, made_dirs)
            raise ApplicationError(f"The archive could not be extracted ({exc.strerror or type(exc).__name__}).") from None
        except BaseException:
            _remove(written, made_dirs)
            raise
    return written


def safe_member_read(zip: zipfile.ZipFile, name: str, limit: int) -> bytes:
    """Read one entry of an open archive that check_zip has accepted, refusing it when it
    holds more than `limit` bytes (by its declared size and by what it actually yields)."""
    try:
        info = zip.getinfo(name)
    except KeyError:
        raise ApplicationError(f"The archive has no entry {name[:200]!r}.") from None
    check_member(info, max_entry_bytes=limit)
    try:
        with zip.open(info) as src:
            data = src.read(limit + 1)
    except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
        raise ApplicationError(f"The archive entry {name[:200]!r} is damaged ({exc}).") from None
    if len(data) > limit:
        raise ApplicationError(f"The archive entry {name[:200]!r} is larger than {_size(limit)}.")
    return data


# --- internals ------------------------------------------------------------------------

@contextmanager
def _open(source: ZipSource, *, max_entries: int) -> Iterator[zipfile.ZipFile]:
    if isinstance(source, zipfile.ZipFile):
        yield source
        return
    if isinstance(source, bytes | bytearray | memoryview):
        source = io.BytesIO(bytes(source))
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as fp:
            _check_directory_size(fp, max_entries=max_entries)
            with _zipfile(fp) as archive:
                yield archive
        return
    _check_directory_size(source, max_entries=max_entries)
    with _zipfile(source) as archive:
        yield archive


@contextmanager
def _zipfile(fp: BinaryIO) -> Iterator[zipfile.ZipFile]:
    try:
        archive = zipfile.ZipFile(fp)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise ApplicationError(f"This is not a valid zip archive ({exc}).") from None
    with archive:
        yield archive


_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")


def _check_directory_size(fp: BinaryIO, *, max_entries: int) -> None:
    """Refuse an archive whose central directory is too big *before* zipfile parses it:
    ZipFile() builds an object per entry, so millions of tiny entries would eat memory
    before check_zip could count them."""
    fp.seek(0, os.SEEK_END)
    end = fp.tell()
    tail_len = min(end, _EOCD.size + 65535)
    fp.seek(end - tail_len)
    tail = fp.read(tail_len)
    fp.seek(0)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        return  # not a zip: zipfile gives the error message
    _, _, _, _, count, dir_size, _, _ = _EOCD.unpack_from(tail, at)
    locator_at = at - _EOCD64_LOCATOR.size
    if (count == 0xFFFF or dir_size == 0xFFFFFFFF) and locator_at >= 0:
        sig, _, offset64, _ = _EOCD64_LOCATOR.unpack_from(tail, locator_at)
        if sig == b"PK\x06\x07" and 0 <= offset64 <= end - _EOCD64.size:
            fp.seek(offset64)
            record = fp.read(_EOCD64.size)
            fp.seek(0)
            if len(record) == _EOCD64.size and record[:4] == b"PK\x06\x06":
                count, dir_size = _EOCD64.unpack(record)[7], _EOCD64.unpack(record)[8]
    if count > max_entries or dir_size > max_entries * _MAX_DIRECTORY_BYTES_PER_ENTRY:
        raise ApplicationError(f"The archive has more than {max_entries:,} entries; at most {max_entries:,} are accepted.")


def _target(root: Path, name: str) -> Path:
    target = (root / name.rstrip("/")).resolve()
    if target == root or not target.is_relative_to(root):
        raise ApplicationError(f"The archive entry {name[:200]!r} points outside the destination.")
    return target


def _make_dirs(root: Path, folder: Path, made: list[Path]) -> None:
    missing = []
    current = folder
    while current != root and not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        path.mkdir()
        made.append(path)
    # A folder reached through a symlink would resolve elsewhere: re-check.
    if not folder.resolve().is_relative_to(root) or (folder != root and folder.is_symlink()):
        raise ApplicationError("The archive would write through a symbolic link.")


def _remove(files: list[Path], dirs: list[Path]) -> None:
    for path in files:
        path.unlink(missing_ok=True)
    for path in reversed(dirs):
        with suppress(OSError):
            path.rmdir()


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.0f} {unit}"
        n /= 1024
    return f"{n} GB"
