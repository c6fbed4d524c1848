"""No panic of the library reaches Python as PyO3's ``PanicException``, a ``BaseException`` that
``except Exception`` does not catch: a panic in an operation (caught by core's bridge, which every
call goes through) or in converting its result is an ``InternalError``, in the blocking and in the
asyncio path. The calls are made to panic by a hook of the native module."""

import pytest

import statestore
from statestore import _aio, _native


@pytest.mark.parametrize("in_conversion", [False, True], ids=["in the call", "in the conversion"])
def test_a_panic_is_an_internal_error_when_blocking(in_conversion: bool) -> None:
    with pytest.raises(statestore.InternalError, match="panicked: a panic injected"):
        _native.panicking_call(in_conversion).wait()


@pytest.mark.parametrize("in_conversion", [False, True], ids=["in the call", "in the conversion"])
async def test_a_panic_is_an_internal_error_when_awaited(in_conversion: bool) -> None:
    with pytest.raises(statestore.InternalError, match="panicked"):
        await _aio.wait(_native.panicking_call(in_conversion))


def test_the_error_is_an_exception() -> None:
    try:
        _native.panicking_call(False).wait()
    except Exception as error:  # what an application writes; PanicException would pass through
        assert isinstance(error, statestore.InternalError)
        assert "please report it" in str(error)
    else:
        pytest.fail("the panicking call returned")
