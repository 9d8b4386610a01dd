"""The checker shipped in every pack as one file, check.py (joined by join.py), and the scripts a
runner starts to verify packs (verify_job.py, task_server.py)."""
