"""pipeline: a build from start to end (options, the build, its report)."""
