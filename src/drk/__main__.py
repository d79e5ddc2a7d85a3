"""`python -m drk ...` is the same as the `drk` console script (used on machines where drk is not installed)."""
from drk.cli import app

if __name__ == "__main__":
    app()
