"""Planning machines reached over SSH: host names, connecting, the remote preflight, shipping and fetching files."""
