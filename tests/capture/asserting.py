"""Functions that use `assert`. They live outside test modules because pytest rewrites the
assert statements of test modules into calls of its own, which is not the user's bytecode."""


def assert_caught(x):
    try:
        assert x.dim() == 5, "not 5-d"
    except AssertionError as error:
        return x * len(error.args[0])
    return x


def assert_passes(x):
    assert x.dim() == 1, "must be 1-d"
    return x + 1
