"""Broken stores written blind (issue 20, second round): ``stores.py``, docs/blind-stores.md."""
