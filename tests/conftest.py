import pytest

from framegraph import config


@pytest.fixture(autouse=True)
def _verify_generated_bytecode():
    """Every replacement code object and resume function the suite generates goes through
    the bytecode verifier; a refusal is a fallback, which the capture helpers assert against."""
    with config.patch(verify_bytecode=True):
        yield
