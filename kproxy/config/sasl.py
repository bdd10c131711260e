"""The `cluster.sasl` settings: how kproxy's own connections to the cluster authenticate.

Only kproxy's discovery uses them; clients' connections carry the clients' own SASL
exchanges through kproxy untouched.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict, model_validator

from kproxy.config.section import Section
from kproxy.config.types import Secret, fail

__all__ = ["SASL_MECHANISMS", "ClusterSaslSettings"]

SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
SASL_MECHANISMS: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class ClusterSaslSettings(Section):
    """Credentials for kproxy's own Metadata requests to a SASL listener."""

    mechanism: SaslMechanism
    username: Annotated[str, Strict(), Field(min_length=1)] | None = Field(
        None, description="PLAIN and SCRAM"
    )
    password: Secret | None = Field(None, description="PLAIN and SCRAM")
    token: Secret | None = Field(
        None,
        description="OAUTHBEARER: the bearer token (a JWT), read when the configuration is loaded",
    )
    token_file: Annotated[str, Strict(), Field(min_length=1)] | None = Field(
        None,
        description="OAUTHBEARER: a file holding the token, read again at every "
        "authentication (a token renewed on disk, such as a projected Kubernetes service "
        "account token)",
    )

    @model_validator(mode="after")
    def _credentials_fit_the_mechanism(self) -> ClusterSaslSettings:
        if self.mechanism == "OAUTHBEARER":
            if (self.token is None) == (self.token_file is None):
                raise fail("token", "OAUTHBEARER takes token or token_file (one of them)")
            for name in ("username", "password"):
                if getattr(self, name) is not None:
                    raise fail(name, "not used by OAUTHBEARER (it takes token)")
            return self
        for name in ("username", "password"):
            if getattr(self, name) is None:
                raise fail(name, f"required for {self.mechanism}")
        for name in ("token", "token_file"):
            if getattr(self, name) is not None:
                raise fail(name, f"not used by {self.mechanism}")
        return self
