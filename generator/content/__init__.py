"""content: the course's lessons loaded, validated and typed (models, YAML, i18n, code derivation,
Markdown); imports files and errors."""
