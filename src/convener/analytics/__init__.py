"""Data agents over SQL data (Conversational Analytics)."""
