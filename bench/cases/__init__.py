"""The benchmark cases of ``bench/run.py``, one module per measured figure.

``common`` holds the timing helpers and the machine description, ``app`` the small
application whose tapes ``bench/gen.py`` writes and whose replay the cases measure.
"""
