"""BIRCH's input datasets (role: data): the pair table of a dataset block (.pairs), built
from the synthetic default (.synthetic) or imported from a published benchmark
(.importers)."""
