"""The end users' side: the rounds waiting for me, and what I answered and started."""
