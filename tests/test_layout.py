"""The layout the README's architecture section describes: the verifier-quality tools live in
their own app (verification), not in files or names that start "quality" and an underscore
beside the trial rollouts (issue 14: `grep -rn` for them finds nothing outside migrations)."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_verifier_tools_have_no_files_or_names_beside_the_rollouts():
    found = subprocess.run(
        ["git", "grep", "--untracked", "-n", "-E", "quality[_]", "--", "*.py", ":!*/migrations/*"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert (found.returncode, found.stdout) == (1, ""), found.stdout  # (git grep: 1 = nothing found)
