"""Moved to pytest_specgate.fetching.weights; this path works until pytest-specgate 0.3."""

from pytest_specgate._moved import keep_old_path

keep_old_path(__name__, 'pytest_specgate.fetching.weights')
