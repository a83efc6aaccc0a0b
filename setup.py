"""The package list, found rather than kept by hand (everything else is in pyproject.toml):
every package under dawrap/, and models/ with its subpackages as ``dawrap.models`` (the
built-in models install inside dawrap, never as a bare top-level ``models`` that a user's
own models.py could shadow or clash with)."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["dawrap", "dawrap.*"])
      + ["dawrap." + name for name in find_packages(include=["models", "models.*"])])
