"""Workloads: a program's recorded launches planned, tuned on every GPU, and measured.

A workload is a named recording (:mod:`autotune.runtime.recording`, stored by
:mod:`autotune.store.workloads`): the problems a program launched, with their calls and GPU
time. :mod:`~autotune.workload.plan` says, per problem, what the runtime picks today and what
tuning it is expected to save; :mod:`~autotune.workload.budget` splits a budget by that;
:mod:`~autotune.workload.tune` spends it (one search per problem, :func:`autotune.tune`'s
:func:`~autotune.search.on_gpu.search_on_gpu`, one worker process per GPU) and measures the
workload's GPU time at the default configs against the tuned ones.
"""
