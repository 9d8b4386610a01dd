"""Job scripts run on a runner (verification, grading, the warm task server), built on check.py's
own functions; nothing outside checker/ imports them."""
