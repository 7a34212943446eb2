"""wirecheck explore: generated operation sequences judged by a model and by
real peers, shrunk to a scenario file (docs/explore.md)."""
