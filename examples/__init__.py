"""Runnable examples: the ``refund_agent`` demo and one integration per agent framework."""
