"""Knowledge: documentation folders and archives, read safely, converted to Markdown, and searched."""
