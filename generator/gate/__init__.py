"""gate: checks on rendered packs before anything is released (leaks, pairing, verification plans)."""
