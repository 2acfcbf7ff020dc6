"""Searching a space: the search loop (tuner) and its options, the strategies that propose
configs, the stored study, the winner rule and re-timing, workers over several GPUs."""
