"""The zero-set-up broker shared by several worker processes (core.filesystem_broker): every
message reaches exactly one of them, whole."""

import fcntl
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from kombu import Connection

from core.filesystem_broker import TAKEN_FOLDER, _written

TRANSPORT = "core.filesystem_broker:Transport"
MESSAGES = 400

# A consumer in a process of its own, as a worker is: takes messages until the queue has
# been empty for a second, printing each body as a line.
CONSUMER = """
import sys, time
from kombu import Connection
folder = sys.argv[1]
options = {"data_folder_in": folder, "data_folder_out": folder, "control_folder": folder + "/control"}
with Connection(transport="core.filesystem_broker:Transport", transport_options=options) as conn:
    queue = conn.SimpleQueue("jobs")
    print("ready", flush=True)
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 1.0:
        try:
            message = queue.get(block=False)
        except queue.Empty:
            time.sleep(0.005)
            continue
        print(message.payload, flush=True)
        message.ack()
        idle_since = time.monotonic()
"""


def _options(folder: Path) -> dict:
    return {"data_folder_in": str(folder), "data_folder_out": str(folder), "control_folder": str(folder / "control")}


def test_two_processes_share_a_queue_and_each_message_reaches_one(tmp_path):
    consumers = [
        subprocess.Popen([sys.executable, "-c", CONSUMER, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
        for _ in range(2)
    ]
    for consumer in consumers:
        assert consumer.stdout.readline().strip() == "ready"
    with Connection(transport=TRANSPORT, transport_options=_options(tmp_path)) as conn:
        queue = conn.SimpleQueue("jobs")
        for n in range(MESSAGES):  # sent while both take, as the web server queues jobs while workers run
            queue.put(json.dumps({"job": n, "padding": "x" * 2000}))
    bodies = []
    for consumer in consumers:
        output, _ = consumer.communicate(timeout=120)
        assert consumer.returncode == 0
        bodies.append([json.loads(line) for line in output.splitlines()])

    received = sorted(body["job"] for taken in bodies for body in taken)
    assert received == list(range(MESSAGES))  # none lost, none twice, none torn (each parsed)
    assert all(bodies), "both processes took messages"
    assert list((tmp_path / TAKEN_FOLDER).iterdir()) == []
    assert not [name for name in tmp_path.iterdir() if name.name.endswith(".msg")]


def test_a_message_taken_before_its_sender_wrote_it_is_read_once_written(tmp_path):
    path = tmp_path / "1_x.jobs.msg"
    sender = path.open("wb", buffering=0)  # created, not yet locked nor written (kombu's _put)

    def write_later() -> None:
        time.sleep(0.05)
        fcntl.flock(sender, fcntl.LOCK_EX)
        time.sleep(0.05)
        sender.write(b'{"job": 1}')
        sender.close()

    writer = threading.Thread(target=write_later)
    writer.start()
    assert _written(path) == b'{"job": 1}'
    writer.join()
