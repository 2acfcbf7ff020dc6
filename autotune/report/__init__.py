"""Reports of stored results: bench tables and plots."""
