"""Fault injection: kill, stop and cut workers and PostgreSQL, then prove nothing was lost."""
