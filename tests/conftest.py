import pytest
import torch

from framegraph import config


@pytest.fixture(autouse=True)
def _verify_generated_bytecode():
    """Every replacement code object and resume function the suite generates goes through
    the bytecode verifier; a refusal is a fallback, which the capture helpers assert against."""
    with config.patch(verify_bytecode=True):
        yield


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    """Cases that make a grad-mode manager without entering it (`torch.set_grad_enabled(False)`
    changes the mode when made) leave the mode changed eagerly too; the next test starts from
    the mode this one started from."""
    before = torch.is_grad_enabled()
    yield
    torch.set_grad_enabled(before)
