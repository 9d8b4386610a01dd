"""The checker shipped in every pack as one file, check.py (joined by join.py), and the scripts a
runner starts to verify packs and grade submissions (jobs/: verify_job.py, grade_job.py,
task_server.py)."""

import shutil
from pathlib import Path

JOBS = Path(__file__).resolve().parent / "jobs"
JOB_LOADER = "checker_module.py"  # beside every job script: how it loads the pack's check.py


def copy_job_script(name: str, folder: Path) -> None:
    """jobs/NAME into a job folder, with the module it loads check.py through."""
    for file in (name, JOB_LOADER):
        shutil.copyfile(JOBS / file, folder / file)
