"""Tests of the ``sessiontape`` command line (a package, so basenames may repeat tests/)."""
