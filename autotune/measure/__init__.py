"""Measuring one config on a GPU: device, compile, verify, time."""
