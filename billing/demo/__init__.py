"""``billing demo``: the whole pipeline on one machine, as separate processes."""
