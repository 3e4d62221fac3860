"""Stage 2: boot guests under the scenarios, on a runner, into run
folders."""
