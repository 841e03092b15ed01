import pytest

# The helpers in tests/support assert too (assert_error, parked, ...): pytest rewrites their
# asserts as it does a test module's, so a failing helper shows what it compared.
pytest.register_assert_rewrite("tests.support")
