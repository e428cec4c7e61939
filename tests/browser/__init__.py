"""The viewer in a real browser (a package, so basenames may repeat tests/)."""
