"""The local state store's native module (private: use ``statestore.testing``)."""

import os
from typing import Optional, Union, final

__version__: str

@final
class Server:
    @staticmethod
    def start(
        host: str = "127.0.0.1",
        port: int = 0,
        max_keys: Optional[int] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
        tls_cert: Optional[Union[str, "os.PathLike[str]"]] = None,
        tls_key: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> "Server": ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def url(self) -> str: ...
    @property
    def stopped(self) -> bool: ...
    def stop(self) -> None: ...
