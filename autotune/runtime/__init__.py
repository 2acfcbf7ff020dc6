"""Using tuned results at run time: lookup, launch, device arrays."""
