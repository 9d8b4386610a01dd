"""check.py's untrusted side: the worker factory and the workers that import the code under
check and hand back data only; the bench helpers a lesson's bench.py imports."""
