"""Agents, their runners and idle strategies: the only code that awaits."""
