"""Evaluations of an app's agents: golden replays scored with the metrics of seed 001."""
