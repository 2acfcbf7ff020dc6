"""Searching a space: the tuner over Optuna, the winner rule, workers over several GPUs."""
