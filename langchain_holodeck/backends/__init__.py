"""Vector store backends; each module holds all that its backend knows."""
