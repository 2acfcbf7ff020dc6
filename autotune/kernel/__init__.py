"""The kernel model: what a kernel is (source, problem, arguments, launch, space, check, objective), the catalog, configs and spaces."""
