"""files: packs in memory, deterministic zips, the cache's atomic writes, the build's memo, YAML
read with positions; imports only errors."""
