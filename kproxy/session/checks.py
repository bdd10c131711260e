"""A request on a listener with authorization rules or tenants, checked before it goes
on (sans-IO): a tenant's names prefixed (`kproxy.session.tenancy`), then what the
caller may do decided entity by entity (`kproxy.session.authorize`)."""

from __future__ import annotations

from kproxy.protocol.headers import RequestHeader
from kproxy.protocol.renaming import renames
from kproxy.session.authorization import Permissions
from kproxy.session.authorize import Verdict, answered, authorize
from kproxy.session.identity import ANONYMOUS
from kproxy.session.response_edit import ResponseEdit
from kproxy.session.state import SessionState
from kproxy.session.tenancy import Tenant, TenantRefusal, TenantScope, to_cluster


def check_request(session: SessionState, hdr: RequestHeader, frame: memoryview) -> Verdict | None:
    """What becomes of a request (None: it goes on as it came). Raises what
    `authorize` and `to_cluster` raise."""
    permissions, tenant = _caller(session, hdr.client_id)
    listener = session.policy.listener
    if tenant is None:
        if permissions is None:  # no tenant, and the cluster as it is
            return None
        return authorize(permissions, session.policy.topic_names, hdr, frame, listener)
    key, version = hdr.api_key, hdr.api_version
    renamed = None
    if renames(key, True, version):  # a Fetch v13+ names nothing: only its ids are checked
        try:
            renamed = to_cluster(tenant, hdr, frame)
        except TenantRefusal as exc:
            return answered(hdr, frame, str(exc), exc.code, [f"tenant:{tenant.name}"])
    assert permissions is not None
    names = session.policy.topic_names
    # Answered by kproxy: from the request as the tenant sent it, its names its own.
    read = None if renamed is None else (renamed.layout, renamed.value)
    verdict = authorize(permissions, names, hdr, frame, listener, read)
    if verdict.answer is not None:
        return verdict
    edit = verdict.edit
    if renames(key, False, version):  # else its answer is left to stream, as it comes
        edit = edit or ResponseEdit(permissions, names)
        edit.tenant = tenant
    if verdict.request is not None or renamed is None:  # split, or as it came
        return Verdict(None, verdict.request, edit, verdict.refused)
    return Verdict(None, None, edit, verdict.refused, renamed.pieces, renamed.size)


def _caller(
    session: SessionState, client_id: str | None
) -> tuple[Permissions | None, Tenant | None]:
    """The caller's permissions and tenant, found again when its principal or client id
    changes or a reload made new rules or tenants."""
    policy = session.policy
    authorizer, tenancy = policy.authorizer, policy.tenancy
    identity = session.identity
    principal = ANONYMOUS if identity is None else identity.principal
    key = (authorizer, tenancy, principal, client_id)
    if session.authz_key == key:
        return session.authz_scope, session.tenant
    host = session.client_host
    scope = None if authorizer is None else authorizer.scope(principal, host, client_id)
    permissions: Permissions | None = scope
    tenant = None
    if tenancy is not None:
        tenant = tenancy.assign(principal, host, session.server_name, policy.listener)
        if tenant is not None or tenancy.unassigned_denied:
            permissions = TenantScope(tenant, scope)
    session.authz_scope, session.tenant, session.authz_key = permissions, tenant, key
    return permissions, tenant
