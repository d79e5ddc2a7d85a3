"""The multi-turn agent: prompts, feedback text, code extraction, episodes and history policies."""
