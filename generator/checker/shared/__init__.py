"""check.py's sources that both sides run: constants and messages, the environment, the
framed protocol between the processes, the sandbox."""
