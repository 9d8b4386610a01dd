"""check.py's trusted side: the process that never imports the code it checks computes the
cases, reads the submitted text, judges, scores and presents."""
