"""Test doubles that users' own test suites may use too: `drk.testing.scripted_server.ScriptedServer`, an
offline OpenAI-compatible server that answers from a script, and `drk.testing.toy_env.toy_env()`, a
learnable stand-in for the evaluator that `drk rl` tests pass to the stage. The product never imports this
package."""
