"""Renamed public names keep working as aliases, each with a DeprecationWarning."""

import warnings

import pytest


def test_store_is_the_old_name_of_run_service():
    import advisor
    import advisor.service

    with pytest.warns(DeprecationWarning, match="advisor.RunService"):
        old = advisor.Store
    assert old is advisor.RunService
    with pytest.warns(DeprecationWarning, match="advisor.service.RunService"):
        assert advisor.service.Store is advisor.service.RunService


def test_the_new_name_does_not_warn():
    import advisor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert advisor.RunService.__name__ == "RunService"
