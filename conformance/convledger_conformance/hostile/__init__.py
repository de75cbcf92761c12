"""Chapter LIM: the hostile-input corpus and its checks, for any store (issue 16)."""
