"""Test doubles that users' own test suites may use too: `drk.testing.scripted_server.ScriptedServer`, an
offline OpenAI-compatible server that answers from a script. The product never imports this package."""
