"""release: verified packs written out (course bundles, Quarto projects)."""
