"""The package list, discovered: every folder of generator/ with an __init__.py, plus the templates
at the repository's top, installed as generator/templates (the rest is in pyproject.toml)."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["generator", "generator.*"]), "generator.templates"])
