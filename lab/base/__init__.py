"""What every stage shares: paths, logging, the store, the variant
and metric declarations, statistics."""
