"""The pack's check.py as a module, for the job scripts beside this file in a job folder
(verify_job.py, grade_job.py): everything else they use of the checker is check.py's own."""

import importlib.util


def load_checker(path):
    """check.py at path, loaded as a module (not registered in sys.modules)."""
    spec = importlib.util.spec_from_file_location("coursepack_job_checker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
