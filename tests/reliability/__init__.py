"""Issue 19 reliability suite: bad input and faults."""
