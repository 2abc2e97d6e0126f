"""The zero-set-up broker: kombu's filesystem transport, safe for several worker processes.

kombu's filesystem channel takes a message by moving its file out of the queue folder into
the system's temporary folder. Where that folder is on another filesystem than `var/` (a
tmpfs `/tmp`, a container's volume), the move is a copy and a delete, and two workers that
list the same message both copy it to the same temporary name: one of them delivers it while
the other may still be rewriting it, so the job reads a torn message, or its file is left
behind. Here a message is taken by renaming it into a folder beside the queue's (`taken/`,
always the same filesystem): a rename is atomic, so of two workers that see a message exactly
one takes it, under a name of its own, reads it once its sender has finished writing it, and
deletes it.

As with kombu's own, a worker killed between taking a message and running it loses the
message: the job watch (config.celery) sends such jobs again once their heartbeat is stale.
"""

import fcntl
import os
import threading
import time
from pathlib import Path

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

TAKEN_FOLDER = "taken"
WRITE_WAIT_TRIES = 100  # × 10 ms


class Channel(filesystem.Channel):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        (Path(self.data_folder_in) / TAKEN_FOLDER).mkdir(parents=True, exist_ok=True)

    def _get(self, queue):
        """The oldest message of `queue` (kombu names files so that they sort by time)."""
        folder = Path(self.data_folder_in)
        taken = folder / TAKEN_FOLDER
        for name in sorted(os.listdir(folder)):
            if name.partition(".")[2] != f"{queue}.msg":
                continue
            mine = taken / f"{os.getpid()}-{threading.get_ident()}-{name}"
            try:
                os.rename(folder / name, mine)
            except FileNotFoundError:  # another worker took it first
                continue
            try:
                payload = _written(mine)
            finally:
                mine.unlink(missing_ok=True)
            return loads(bytes_to_str(payload))
        raise virtual.Empty()


def _written(path: Path) -> bytes:
    """The message's bytes once its sender has written them: kombu's `_put` creates the file,
    then locks it while it writes, so a message taken in between reads empty until then."""
    with path.open("rb") as file:
        for _ in range(WRITE_WAIT_TRIES):
            fcntl.flock(file, fcntl.LOCK_SH)  # waits while the sender holds its lock
            payload = file.read()
            fcntl.flock(file, fcntl.LOCK_UN)
            if payload:
                return payload
            file.seek(0)
            time.sleep(0.01)
    raise ChannelError(f"The broker message {path.name} stayed empty: its sender did not write it.")


class Transport(filesystem.Transport):
    Channel = Channel
