"""Ground floor: process-wide pieces every other floor may use (files, signals, caches)."""
