"""The object store as an operator configures it: STORAGE_BACKEND and the AWS_* variables (or
STORAGE_OPTIONS) in the environment of manage.py, against the tests' S3 server (tests/s3.py)."""

import json
import os
import subprocess
import sys
import uuid

from django.conf import settings

from tests.s3 import CREDENTIALS, S3_BACKEND

SAVE_ONE_FILE = (
    "from django.core.files.base import ContentFile; from django.core.files.storage import default_storage as s; "
    "name = s.save('uploads/hello.txt', ContentFile(b'hello')); again = s.save('uploads/hello.txt', ContentFile(b'again')); "
    "print(name, again, s.open(name).read().decode(), s.open(again).read().decode())"
)


def manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "STORAGE_"))}
    environment.update(TASKWRIGHT_VAR_DIR=str(tmp_path / "var"), DEBUG="1", **env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=environment, capture_output=True,
                          text=True, timeout=120)


def test_s3_without_a_bucket_refuses_to_start(tmp_path):
    result = manage(tmp_path, "check", STORAGE_BACKEND=S3_BACKEND)
    assert result.returncode != 0
    assert "STORAGE_BACKEND is S3: set AWS_STORAGE_BUCKET_NAME" in result.stderr


def test_the_aws_variables_point_the_default_storage_at_the_bucket_and_never_overwrite(tmp_path, s3_server):
    prefix = f"settings-{uuid.uuid4().hex[:8]}"
    result = manage(
        tmp_path, "shell", "-c", SAVE_ONE_FILE, STORAGE_BACKEND=S3_BACKEND, AWS_STORAGE_BUCKET_NAME=s3_server.bucket,
        AWS_S3_ENDPOINT_URL=s3_server.endpoint_url, AWS_S3_REGION_NAME="us-east-1", STORAGE_OPTIONS=json.dumps({"location": prefix}),
        **CREDENTIALS,
    )
    assert result.returncode == 0, result.stderr
    first, second, *texts = result.stdout.strip().splitlines()[-1].split()  # after "N objects imported automatically"
    assert first == "uploads/hello.txt" and second != first and second.startswith("uploads/hello_")  # a taken name gets another
    assert texts == ["hello", "again"]
    assert s3_server.keys(f"{prefix}/") == sorted([f"{prefix}/{first}", f"{prefix}/{second}"])
    assert not (tmp_path / "var" / "media").exists()  # nothing on the local disk
