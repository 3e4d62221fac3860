"""Host side of the softirq-rt lab: build variants, boot them, measure."""
