"""render: content -> packs in memory (Jinja, HTML, charts, notebooks); pure, writes nothing."""
