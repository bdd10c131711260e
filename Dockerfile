# kproxy: a Kafka protocol-aware proxy.
#   docker build -t kproxy .
#   docker run --read-only -v "$PWD/config/gateway.yaml:/etc/kproxy/kproxy.yaml:ro" \
#     -p 9092:9092 -p 9100-9110:9100-9110 -p 9201-9203:9201-9203 kproxy
# Publish the bootstrap port and every node port the configuration maps
# (`kproxy check-config --config FILE` lists them). The image runs as uid 10001 with a
# read-only root filesystem: /var/lib/kproxy, its working directory, is the one volume
# it writes (the event log), and /etc/kproxy/kproxy.yaml is the configuration it reads,
# the path the Helm chart and deploy/kubernetes mount it at.
FROM python:3.11-slim AS build
WORKDIR /src
# The image runs the compiled hot path (setup.py, KPROXY_COMPILE=1: mypyc builds the
# modules pyproject.toml lists under [tool.kproxy] compiled). The C compiler and mypy
# stay in this stage; the final one gets the wheels.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir "mypy==2.4.1" "setuptools==80.9.0" "types-PyYAML==6.0.12.20261113"
COPY pyproject.toml setup.py README.md ./
COPY kproxy ./kproxy
# mypyc type-checks whatever the compiled modules import: kproxy's dependencies first.
RUN pip install --no-cache-dir . \
    && KPROXY_COMPILE=1 pip wheel --no-cache-dir --no-build-isolation --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels \
    && groupadd --system --gid 10001 kproxy \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/kproxy \
        --no-create-home --shell /usr/sbin/nologin kproxy \
    && install -d -m 0755 /etc/kproxy \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/kproxy /var/lib/kproxy/events
WORKDIR /var/lib/kproxy
VOLUME ["/var/lib/kproxy"]
USER 10001:10001
# 9092: bootstrap; 9100+: one port per broker node (broker_port_base + node id); 9644: admin.
EXPOSE 9092 9100-9110 9644
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
HEALTHCHECK --interval=10s --timeout=3s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9644/healthz', timeout=2)"]
ENTRYPOINT ["kproxy"]
CMD ["run", "--config", "/etc/kproxy/kproxy.yaml"]
