"""Results in and out of other forms: autotune's JSON results files and Kernel Tuner's T4 format
(``share``, ``share_entry``, ``t4``, ``t4_read``), Kernel Tuner's cache files (``kt_cache``), and
whole recorded tables of a space with the replays and the score that evaluate a strategy on them
(``table``, ``replay``, ``score``)."""
