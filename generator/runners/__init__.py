"""runners: where generated checkers run (local processes, a command template, Slurm); imports only
files and errors."""
