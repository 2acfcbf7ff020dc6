"""The transpose op at run time: ``autotune.transpose(x)`` (``op``), which kernel and config a
shape takes (``choice``, over the stored op best and ``rule``), a launch made ready once
(``prepared``), and how any GPU array is read as a batch of row-pitched matrices (``views``,
``layout``)."""
