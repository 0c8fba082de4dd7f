"""The documentation site (Sphinx): a package only so that its conftest.py is not taken for tests/conftest.py."""
